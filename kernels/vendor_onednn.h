// Shared oneDNN CPU engine and stream for every onednn/* implementation (built with oneDNN only).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

namespace pb::onednn {

dnnl::engine& engine();
dnnl::stream& stream();
std::string version();  // "2.6.3"

}  // namespace pb::onednn
