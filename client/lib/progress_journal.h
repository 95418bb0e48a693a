// The journal `pricer price` keeps next to its output files while a run is
// in progress, so that an interrupted run (server or client killed, network
// gone) continues with `pricer price ... --resume` instead of starting over.
//
// The file: a text header of two lines, "pricer progress journal 1" and the
// fingerprint of the run (64 hex digits), then records, each a varint length
// and a serialized PriceReply: first the `accepted` of the whole column
// range, then every `chunk` and `prices` reply whose values are in the .npy
// files by then, with the values cleared (the column or issuer range and the
// statistics stay).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pricer/v1/pricer.pb.h"

namespace pricer {

class ProgressJournal {
 public:
  // SHA-256 (hex) of what decides the bytes a run writes: the request,
  // serialized deterministically, and the names of its output files. How
  // the run is split, over which servers and at which priority does not
  // count.
  static std::string Fingerprint(const v1::PriceRequest& request,
                                 const std::vector<std::string>& output_files);

  // Starts a journal at `path`, replacing any.
  static absl::StatusOr<ProgressJournal> Create(const std::string& path,
                                                const std::string& fingerprint);
  // Reopens the journal of an interrupted run for appending. `records`
  // receives its replies in order; a torn last record (the run was killed
  // while appending it) is dropped. Fails with NOT_FOUND when there is no
  // journal, and with FAILED_PRECONDITION, naming it, when it is not a
  // journal or was written for another fingerprint.
  static absl::StatusOr<ProgressJournal> Resume(const std::string& path,
                                                const std::string& fingerprint,
                                                std::vector<v1::PriceReply>* records);

  ProgressJournal(ProgressJournal&& other) noexcept;
  ProgressJournal& operator=(ProgressJournal&& other) = delete;
  ~ProgressJournal();

  // Appends `reply` without its values and flushes it to the operating
  // system (a killed client loses nothing appended). Not thread-safe.
  absl::Status Append(const v1::PriceReply& reply);
  // Closes and deletes the journal: the run is complete.
  absl::Status Remove();

  const std::string& path() const { return path_; }

 private:
  ProgressJournal(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}

  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace pricer
