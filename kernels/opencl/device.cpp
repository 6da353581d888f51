// Device choice (first GPU, else first device, or PRIMBENCH_OPENCL_DEVICE), the process-wide
// context and profiling queue, and the device description for benchmark context.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/core/error.h"
#include "kernels/opencl/runtime.h"

namespace pb::ocl {
namespace {

struct Candidate {
  cl_platform_id platform;
  cl_device_id device;
  std::string name;
  cl_device_type type;
};

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  if (clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  if (clGetDeviceInfo(d, what, sizeof(T), &v, nullptr) != CL_SUCCESS) return T{};
  return v;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// All devices of all platforms, in platform order. Sets *why when there are none.
std::vector<Candidate> enumerate(std::string* why) {
  std::vector<Candidate> all;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err != CL_SUCCESS || np == 0) {
    *why = "no OpenCL platform";
    return all;
  }
  std::vector<cl_platform_id> platforms(np);
  if (clGetPlatformIDs(np, platforms.data(), nullptr) != CL_SUCCESS) {
    *why = "no OpenCL platform";
    return all;
  }
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> devs(nd);
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : devs) {
      all.push_back({p, d, device_string(d, CL_DEVICE_NAME),
                     device_value<cl_device_type>(d, CL_DEVICE_TYPE)});
    }
  }
  if (all.empty()) *why = "no OpenCL device";
  return all;
}

// Index into `all`, or -1 with *why set.
int choose(const std::vector<Candidate>& all, std::string* why) {
  const char* env = std::getenv("PRIMBENCH_OPENCL_DEVICE");
  if (env && *env) {
    std::string want = env;
    bool numeric =
        std::all_of(want.begin(), want.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    if (numeric && want.size() < 9) {
      int i = std::atoi(want.c_str());
      if (i < static_cast<int>(all.size())) return i;
    } else {
      for (size_t i = 0; i < all.size(); ++i)
        if (lower(all[i].name).find(lower(want)) != std::string::npos) return static_cast<int>(i);
    }
    std::string have;
    for (size_t i = 0; i < all.size(); ++i)
      have += (i ? ", " : "") + std::to_string(i) + ": " + all[i].name;
    *why = "PRIMBENCH_OPENCL_DEVICE=" + want + " matches no device (have: " + have + ")";
    return -1;
  }
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].type & CL_DEVICE_TYPE_GPU) return static_cast<int>(i);
  return 0;
}

struct Runtime {
  std::string reason;  // "" when usable
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  DeviceInfo info;

  Runtime() {
    try {
      init();
    } catch (const std::exception& e) {
      reason = e.what();
    } catch (...) {
      reason = "OpenCL initialisation failed";
    }
  }
  // Released at exit by the OS; releasing here could race drivers' own atexit teardown.

  void init() {
    std::vector<Candidate> all = enumerate(&reason);
    if (all.empty()) return;
    int i = choose(all, &reason);
    if (i < 0) return;
    const Candidate& c = all[i];
    device = c.device;
    cl_int err = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     reinterpret_cast<cl_context_properties>(c.platform), 0};
    context = clCreateContext(props, 1, &device, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) {
      reason = std::string("clCreateContext failed: ") + error_name(err);
      return;
    }
    queue = clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) {
      reason = std::string("clCreateCommandQueue failed: ") + error_name(err);
      return;
    }
    info.name = c.name;
    info.vendor = device_string(device, CL_DEVICE_VENDOR);
    info.version = device_string(device, CL_DEVICE_VERSION);
    info.driver_version = device_string(device, CL_DRIVER_VERSION);
    info.platform_name = platform_string(c.platform, CL_PLATFORM_NAME);
    info.platform_version = platform_string(c.platform, CL_PLATFORM_VERSION);
    info.type = c.type;
    info.compute_units = device_value<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS);
    info.max_work_group_size = device_value<size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
    info.local_mem_size = device_value<cl_ulong>(device, CL_DEVICE_LOCAL_MEM_SIZE);
    info.global_mem_size = device_value<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE);
    info.max_mem_alloc_size = device_value<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
    clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(info.max_work_item_sizes),
                    info.max_work_item_sizes, nullptr);
    info.fp64 = device_value<cl_device_fp_config>(device, CL_DEVICE_DOUBLE_FP_CONFIG) != 0 &&
                !fp64_forced_off();
    info.fp16 =
        device_string(device, CL_DEVICE_EXTENSIONS).find("cl_khr_fp16") != std::string::npos;
  }
};

const Runtime& runtime() {
  static const Runtime* rt = new Runtime();  // never destroyed: see ~Runtime note
  return *rt;
}

const Runtime& usable() {
  const Runtime& rt = runtime();
  if (!rt.reason.empty()) throw Unsupported("no OpenCL device: " + rt.reason);
  return rt;
}

}  // namespace

bool fp64_forced_off() {
  const char* v = std::getenv("PRIMBENCH_OCL_FP64");
  if (!v || !*v || std::string(v) == "1") return false;
  if (std::string(v) == "0") return true;
  throw InputError("PRIMBENCH_OCL_FP64", std::string("'") + v + "' is not 0 or 1");
}

std::string unavailable_reason() {
  try {
    return runtime().reason;
  } catch (...) {
    return "OpenCL initialisation failed";
  }
}

cl_device_id device() {
  return usable().device;
}
cl_context context() {
  return usable().context;
}
namespace {
thread_local cl_command_queue t_queue = nullptr;
}  // namespace

cl_command_queue queue() {
  return t_queue ? t_queue : usable().queue;
}
void set_thread_queue(cl_command_queue q) {
  t_queue = q;
}
const DeviceInfo& device_info() {
  return usable().info;
}

std::string device_summary() {
  std::string why = unavailable_reason();
  if (!why.empty()) return "unavailable: " + why;
  const DeviceInfo& i = runtime().info;
  return i.name + " (" + i.vendor + ", " + std::to_string(i.compute_units) + " CU, " +
         std::to_string(i.local_mem_size / 1024) + " KiB local), " + i.platform_name + " " +
         i.platform_version + ", driver " + i.driver_version;
}

void finish() {
  check(clFinish(queue()), "clFinish");
}

}  // namespace pb::ocl
