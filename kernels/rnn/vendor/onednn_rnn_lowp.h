// onednn/auto in a reduced data type (bf16, u8s8; forward inference): what onednn/auto
// (onednn_rnn.cpp) hands a descriptor with dt != f32. Built with oneDNN only.
#pragma once

#include <memory>
#include <string>

#include "kernels/rnn/rnn.h"

namespace pb {

// Why oneDNN does not run d (dt != f32) in direction dir on this CPU (its own answer), or "".
std::string rnn_onednn_lowp_unsupported(const RnnDesc& d, Dir dir);
std::unique_ptr<RnnImpl> make_rnn_onednn_lowp();

}  // namespace pb
