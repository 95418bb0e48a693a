// One Price call (PriceReactor, in price_reactor.cc): checks and submits the
// request on the gRPC thread that receives it, then writes `accepted` once the
// job's inputs are ready, each chunk as the engine queues it, and `finished`;
// a reader that takes no reply for --stalled-reader-seconds is cancelled.
// The method is raw (serialized messages): the replies are encoded by
// EncodeReply (reply_encoding.h), whose chunks send their values uncopied.
#pragma once

#include "pricer/v1/pricer.grpc.pb.h"
#include "server/service/pricer_service.h"

namespace pricer {

// The reactor of one Price call; it deletes itself when the call is done.
grpc::ServerWriteReactor<grpc::ByteBuffer>* NewPriceReactor(PricerService& service,
                                                            grpc::CallbackServerContext& context,
                                                            const grpc::ByteBuffer& request);

}  // namespace pricer
