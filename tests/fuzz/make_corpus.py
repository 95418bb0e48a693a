#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets: corpus/<target>/<name>, a
few small valid and invalid inputs each. Rerun after changing it; the
files are committed, so scripts/fuzz.sh needs no Python."""

import hashlib
import pathlib
import struct
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from wire_format import varint  # noqa: E402  (tests/wire_format.py)

# The fingerprint progress_journal_fuzzer.cc resumes with.
FINGERPRINT = "0123456789abcdef" * 4
# The set price_request_fuzzer.cc stores: 2 x 3, column-major.
STORED = (2, 3, [0.5, 1.0, 1.5, 2.0, 2.5, 3.0])


def load_protos():
    # The Python client's generated modules (scripts/python-protos.sh).
    sys.path.insert(0, str(HERE.parent.parent / "client" / "python"))
    from pricer_client._proto import pricer_pb2
    return pricer_pb2


def floats(values):
    return struct.pack(f"<{len(values)}f", *values)


def stored_id(rows, columns, values):
    return hashlib.sha256(struct.pack("<qq", rows, columns) + floats(values)).hexdigest()


def npy(descr, fortran, shape, data):
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def book_requests(pb, request):
    """A book of a call, a put and a stock on 2 issuers (A: 3 rows), on
    historical returns of 4 scenarios (P x N = 4 x 2), V sent back; and the
    same with its ES and VaR contributions, delta and vega and errors."""
    book = request(spot=[5.0, 7.5], volatility=[0.2, 0.3])
    book.paths = 0
    book.instruments.extend([
        pb.Instrument(issuer=0, type=pb.Instrument.TYPE_CALL, strike=5, expiry=1.5),
        pb.Instrument(issuer=1, type=pb.Instrument.TYPE_PUT, strike=7, expiry=1.0,
                      volatility=0.25),
        pb.Instrument(issuer=1, type=pb.Instrument.TYPE_STOCK)])
    book.returns.matrix.CopyFrom(pb.Matrix(rows=4, columns=2,
                                           values=floats([0.1, -0.2, 0.05, 0, 0.3, 0.1, -0.1, 0])))
    book.scenarios.generated.columns = 4
    book.output.instrument_values = True
    attributed = pb.PriceRequest()
    attributed.CopyFrom(book)
    attributed.output.statistics.CopyFrom(pb.StatisticsSelection(
        es=[0.975], var=[0.9], es_contributions=[0.975], var_contributions=[0.9], delta=True,
        vega=True, errors=True))
    return book, attributed


def price_requests(pb):
    def request(**market):
        r = pb.PriceRequest(rate=0.02, maturity=1.0, paths=16, seed=42)
        if "spot" in market:
            r.market.explicit.spot.extend(market["spot"])
            r.market.explicit.volatility.extend(market["volatility"])
        else:
            r.market.generated.CopyFrom(pb.GeneratedMarket(
                issuers=market["issuers"], seed=7, spot_min=5, spot_max=10, volatility_min=0,
                volatility_max=1))
        return r

    generated = request(issuers=3)
    generated.scenarios.generated.CopyFrom(
        pb.GeneratedScenarios(columns=8, seed=1, value_min=0, value_max=1))
    generated.output.statistics.quantiles.extend([0.05, 0.5])
    generated.output.statistics.var.append(0.99)
    inline = request(spot=[5.0, 7.5], volatility=[0.2, 0.3])
    inline.scenarios.matrix.CopyFrom(pb.Matrix(rows=2, columns=2,
                                               values=floats([1, 2, 3, 4])))
    inline.output.full = True
    inline.column_begin, inline.column_end = 1, 2
    correlated = request(spot=[5.0, 6.0], volatility=[0.2, 0.2])
    correlated.market.correlation.extend([1.0, 0.5, 0.5, 1.0])
    correlated.scenarios.generated.columns = 4
    correlated.antithetic = True
    correlated.precision = pb.PRECISION_TF32
    stored = request(spot=[5.0, 6.0], volatility=[0.1, 0.4])
    stored.scenarios.scenario_set = stored_id(*STORED)
    stored.output.terminal_prices = True
    # Over 10,000 issuers: drawn by the job's preparation, not at validation.
    large = request(issuers=12_000)
    large.scenarios.generated.columns = 2
    bad = request(spot=[5.0], volatility=[0.2, 0.3])
    bad.scenarios.generated.columns = 0
    # A precision target on the generated request's VaR 0.99.
    targeted = pb.PriceRequest()
    targeted.CopyFrom(generated)
    targeted.target.CopyFrom(pb.PrecisionTarget(
        statistic=pb.PrecisionTarget.STATISTIC_VAR, level=0.99, relative=0.02, max_paths=64))
    book, attributed = book_requests(pb, request)
    return {"generated": generated.SerializeToString(), "inline": inline.SerializeToString(),
            "book-historical": book.SerializeToString(),
            "book-contributions": attributed.SerializeToString(),
            "targeted": targeted.SerializeToString(),
            "correlated": correlated.SerializeToString(), "stored": stored.SerializeToString(), "large-generated": large.SerializeToString(),
            "bad-market": bad.SerializeToString(), "garbage": b"\xff\xff\xff"}


def journals(pb):
    header = f"pricer progress journal 1\n{FINGERPRINT}\n".encode()

    def record(reply):
        data = reply.SerializeToString()
        return varint(len(data)) + data

    accepted = record(pb.PriceReply(accepted=pb.JobAccepted(
        job_id="j1", issuers=2, paths=16, column_begin=0, column_end=8)))
    chunk = record(pb.PriceReply(chunk=pb.ResultChunk(column_begin=0, column_end=4, rows=2)))
    prices = record(pb.PriceReply(prices=pb.TerminalPricesChunk(issuer_begin=0, issuer_end=2)))
    values = record(pb.PriceReply(values=pb.InstrumentValuesChunk(instrument_begin=0,
                                                                  instrument_end=3)))
    return {"header-only": header, "records": header + accepted + chunk + prices,
            "book-records": header + accepted + chunk + values,
            "torn": header + accepted + chunk[:-2], "other-run": header.replace(b"0123", b"4567"),
            "not-a-journal": b"hello\n"}


def price_replies(pb):
    # The first byte says where the rest is cut into slices (price_reply_fuzzer.cc).
    chunk = pb.PriceReply(chunk=pb.ResultChunk(column_begin=4, column_end=6, rows=2,
                                               values=floats([1, 2, 3, 4]),
                                               statistics=pb.ColumnStatistics(v0=[1, 2])))
    prices = pb.PriceReply(prices=pb.TerminalPricesChunk(issuer_begin=0, issuer_end=1, rows=2,
                                                         values=floats([5, 6])))
    accepted = pb.PriceReply(accepted=pb.JobAccepted(job_id="j1", issuers=2, paths=2,
                                                     column_begin=0, column_end=8))
    # A targeted request's round, then a chunk of twice its paths.
    rounds = (pb.PriceReply(round=pb.RoundStarted(round=1, paths=4, columns=2, column_begin=0,
                                                 column_end=8)).SerializeToString()
              + pb.PriceReply(chunk=pb.ResultChunk(
                  column_begin=2, column_end=4, rows=4,
                  statistics=pb.ColumnStatistics(v0=[1, 2], mean=[3, 4], mean_standard_error=[
                      0.1, 0.2], target_met=[True, False]))).SerializeToString())
    values_first = (pb.PriceReply(chunk=pb.ResultChunk(values=floats([7, 8]))).SerializeToString()
                    + pb.PriceReply(chunk=pb.ResultChunk(column_end=1, rows=2)).SerializeToString())
    book_values = pb.PriceReply(values=pb.InstrumentValuesChunk(
        instrument_begin=1, instrument_end=3, rows=2, values=floats([1, 2, 3, 4])))
    # A chunk of 2 columns with ES contributions to 3 rows and delta of 2 issuers.
    contributed = pb.PriceReply(chunk=pb.ResultChunk(
        column_begin=0, column_end=2, rows=2, statistics=pb.ColumnStatistics(v0=[1, 2]),
        contributions=[pb.Contributions(measure=pb.Contributions.MEASURE_ES, level=0.975,
                                        rows=3, band_paths=1, values=floats(range(6)),
                                        issuers=2, delta=floats(range(4)))]))
    return {"chunk": b"\x55" + chunk.SerializeToString(),
            "contributions": b"\x21" + contributed.SerializeToString(),
            "prices": b"\xff" + prices.SerializeToString(),
            "instrument-values": b"\x33" + book_values.SerializeToString(),
            "accepted": b"\x00" + accepted.SerializeToString(),
            "values-first": b"\x0f" + values_first,
            "chunk-then-finished": b"\x01" + chunk.SerializeToString()
            + pb.PriceReply(finished=pb.JobFinished(flops=8)).SerializeToString(),
            "round-then-chunk": b"\x02" + rounds,
            "garbage": b"\x03\x12\xff\xff",
            # A chunk's length of 0 in 6 bytes: protobuf refuses it (the
            # fuzzer found the decoder accepting it, 2026-12-06).
            "overlong-length": b"\x01\x12\x80\x80\x80\x80\x80\x00\x32\x04\x12\x00\x32\x00"}


def instruments_csvs():
    """The instruments file's seeds (fuzz_instruments_csv): labels, pandas'
    index column, a bad type, an unknown label, a missing strike."""
    return {
        "labels": b"issuer,type,strike,expiry,volatility\nACME,call,105,1.5,\nB,PUT,95,1,0.3\n",
        "pandas": b",expiry,type,issuer,desk,strike\n0,1.0,call,0,rates,8\n1,,stock,1,x,\n",
        "bad-type": b"issuer,type,strike,expiry\n0,swap,8,1\n",
        "unknown-label": b"issuer,type,strike,expiry\nGlobex,call,8,1\n",
        "missing-strike": b"issuer,type,strike,expiry\n0,call,,1\n",
        "no-header": b"0,call,8,1\n",
        "quoted": b'issuer,type,strike,expiry\n"ACME, Inc.",forward,"1e2",2\n',
    }


def main():
    pb = load_protos()
    f4 = floats([1, 2, 3, 4, 5, 6])
    corpora = {
        "fuzz_price_request": price_requests(pb),
        "fuzz_npy": {
            "f4-c": npy("<f4", False, (2, 3), f4),
            "f8-fortran": npy("<f8", True, (3, 2), struct.pack("<6d", 1, 2, 3, 4, 5, 6)),
            "short": npy("<f4", False, (2, 3), f4[:10]),
            "int-dtype": npy("<i4", False, (2, 3), f4),
            "1-d": npy("<f4", False, (6,), f4),
            # Sizes the file cannot hold: refused before allocating them.
            "huge-header": b"\x93NUMPY\x02\x00\xff\xff\xff\xff{}",
            "huge-shape": npy("<f8", False, (2**40, 2**40), f4),
        },
        "fuzz_market_csv": {
            "valid": b"spot,volatility\n5,0.2\n7.5,0.3\n\n10,1\n",
            "crlf": b"spot,volatility\r\n5,0.2\r\n",
            "no-header": b"5,0.2\n",
            "bad-row": b"spot,volatility\n5,0.2,1\nx,y\n",
            "pandas": b",spot,volatility\n0,5.1,0.2\n1,6,0.3\n",
            "issuer-shuffled": b" sector , volatility,issuer, spot\ntech, 0.2 ,A, 5\nbank,0.3,B,7\n",
            "quoted": b'"issuer",spot,volatility\r\n"ACME, Inc.",5,0.2\r\n "a ""b""" ,7,"0.3"\r\n',
            "open-quote": b'issuer,spot,volatility\n"ACME,5,0.2\n',
        },
        "fuzz_correlation_csv": {
            "2x2": b"1,0.5\n0.5,1\n",
            "3x3": b"1,0,0\n0,1,0.25\n0,0.25,1\n",
            "ragged": b"1,0.5\n0.5\n",
            "not-square": b"1,0.5\n",
            "nan": b"nan,inf\n-inf,1e400\n",
            "pandas": b",A,B\nA,1,0.3\nB,0.3,1\n",
            "header": b" A , B \n1,0.3\n0.3,1\n",
            "label-column": b"A, 1, 0.3\nB, 0.3, 1\n",
            "quoted": b',"A, Inc.","B ""b"""\n"A, Inc.",1,0.3\n"B ""b""",0.3,1\n',
        },
        "fuzz_instruments_csv": instruments_csvs(),
        "fuzz_progress_journal": journals(pb),
        "fuzz_price_reply": price_replies(pb),
        "fuzz_upload_assembler": {},
    }
    chunk = lambda **kw: pb.ScenarioChunk(**kw).SerializeToString()
    record = lambda data: struct.pack("<H", len(data)) + data
    values = floats([1, 2, 3, 4, 5, 6])
    corpora["fuzz_upload_assembler"] = {
        "one-chunk": record(chunk(rows=2, columns=3, values=values)),
        "three-chunks": record(chunk(rows=2, columns=3, values=values[:5])) +
                        record(chunk(values=values[5:13])) + record(chunk(rows=2, values=values[13:])),
        "truncated": record(chunk(rows=2, columns=3, values=values[:8])),
        "inconsistent": record(chunk(rows=2, columns=3)) + record(chunk(rows=3, values=values)),
        "too-large": record(chunk(rows=100, columns=100, values=values)),
    }
    for target, inputs in corpora.items():
        folder = HERE / "corpus" / target
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in inputs.items():
            (folder / name).write_bytes(data)


if __name__ == "__main__":
    main()
