#include "claimcheck/io.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "claimcheck/base/process.h"
#include "claimcheck/check.h"

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

std::string python_interpreter() {
  if (const char* e = std::getenv("CLAIMCHECK_PYTHON"); e && *e) return e;
#ifdef CLAIMCHECK_DEFAULT_PYTHON
  if (const char* d = CLAIMCHECK_DEFAULT_PYTHON; *d && access(d, X_OK) == 0) return d;
#endif
  return "python3";
}

namespace {

template <typename T>
void write_npy_impl(const fs::path& p, const T* data, const std::vector<long>& shape, const char* descr) {
  std::string shp = "(";
  long n = 1;
  for (long d : shape) {
    shp += std::to_string(d) + ",";
    if (shape.size() > 1) shp += " ";
    n *= d;
  }
  if (shape.size() > 1) shp.erase(shp.size() - 2, 1);
  shp += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shp + ", }";
  const std::size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream out(p, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out << header;
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(T)));
  if (!out) throw std::runtime_error(p.string() + ": cannot be written");
}

template <typename T>
std::vector<T> read_npy_impl(const fs::path& p, const char* descr, std::vector<long>* shape_out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(p.string() + ": field '(file)': cannot be read");
  char magic[8];
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw std::runtime_error(p.string() + ": field '(magic)': not an .npy file");
  std::uint32_t hlen = 0;
  if (magic[6] == 1) {
    std::uint16_t h16;
    in.read(reinterpret_cast<char*>(&h16), 2);
    hlen = h16;
  } else {
    in.read(reinterpret_cast<char*>(&hlen), 4);
  }
  std::string header(hlen, '\0');
  in.read(header.data(), hlen);
  if (header.find(std::string("'descr': '") + descr + "'") == std::string::npos)
    throw std::runtime_error(p.string() + ": field 'descr': expected " + descr + " in " + header);
  if (header.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error(p.string() + ": field 'fortran_order': expected C order");
  const auto a = header.find("'shape': ("), b = header.find(')', a);
  if (a == std::string::npos || b == std::string::npos)
    throw std::runtime_error(p.string() + ": field 'shape': missing");
  std::vector<long> shape;
  std::stringstream ss(header.substr(a + 10, b - a - 10));
  long n = 1;
  for (std::string tok; std::getline(ss, tok, ',');)
    if (tok.find_first_not_of(' ') != std::string::npos) {
      shape.push_back(std::stol(tok));
      n *= shape.back();
    }
  std::vector<T> data(n);
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(n * sizeof(T)));
  if (!in) throw std::runtime_error(p.string() + ": field '(data)': truncated");
  if (shape_out) *shape_out = shape;
  return data;
}

}  // namespace

void write_npy(const fs::path& p, const float* d, const std::vector<long>& s) { write_npy_impl(p, d, s, "<f4"); }
void write_npy(const fs::path& p, const double* d, const std::vector<long>& s) { write_npy_impl(p, d, s, "<f8"); }
std::vector<float> read_npy_f32(const fs::path& p, std::vector<long>* s) { return read_npy_impl<float>(p, "<f4", s); }
std::vector<double> read_npy_f64(const fs::path& p, std::vector<long>* s) { return read_npy_impl<double>(p, "<f8", s); }

json run_python_driver(const Context& ctx, const std::string& script, const std::vector<std::string>& args) {
  const fs::path path = ctx.root() / script;
  std::vector<std::string> argv{python_interpreter(), path.string()};
  // In a test suite that started a warm interpreter (harness/python/zygote.py; $CLAIMCHECK_PY_ZYGOTE, its socket),
  // the answer key's references (reference/python/: values computed by torch, transformers and peft, no time nor
  // memory measured) fork it rather than importing those afresh (2-5 s each time), in a run that judges no time. The
  // checks' own drivers run fresh: a process forked from a large one reports its peak memory (a child's ru_maxrss
  // keeps the forking image's), and their cost is their work, not their imports.
  const char* zygote = std::getenv("CLAIMCHECK_PY_ZYGOTE");
  std::error_code ec;
  if (zygote && *zygote && script.rfind("reference/python/", 0) == 0 && fs::is_socket(zygote, ec) &&
      !ctx.timing_judged())
    argv = {python_interpreter(), "-S", (ctx.root() / "harness/python/zygote.py").string(), "run", zygote,
            path.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions opt;
  opt.merge_stderr = true;  // the driver's log and traceback go into the failure message
  ProcessResult p = run_process(argv, opt);
  if (!p.started) throw std::runtime_error(script + ": " + p.error);
  const std::string& out = p.out;
  const int rc = p.exit_code;
  // The last line that parses as a JSON object is the result; everything else is the driver's log.
  std::istringstream lines(out);
  json result;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    try {
      result = json::parse(line);
    } catch (const json::parse_error&) {
    }
  }
  if (rc != 0 || !result.is_object()) {
    std::string tail = out.size() > 600 ? out.substr(out.size() - 600) : out;
    for (auto& c : tail)
      if (c == '\n') c = ' ';
    throw std::runtime_error(script + ": driver failed (exit " + std::to_string(rc) + "): " + tail);
  }
  return result;
}

void forward_driver_result(Context& ctx, const json& r) {
  if (r.contains("skip") && r["skip"].is_string()) ctx.skip(r["skip"].get<std::string>());
  for (const auto& a : r.value("assumptions", json::array())) ctx.assumption(a.get<std::string>());
  const json details = r.value("details", json::object());  // items() must not outlive its object
  for (const auto& [k, v] : details.items()) ctx.detail(k, v);
  for (const auto& d : r.value("derived", json::array()))
    ctx.derive(d.at("name").get<std::string>(), d.at("value").get<double>(), d.at("unit").get<std::string>());
  for (const auto& a : r.value("alternatives", json::array()))
    ctx.alternative(a.at("name"), a.at("value"), a.at("unit"), a.value("assumptions", ""));
  for (const auto& p : r.value("pending", json::array())) ctx.pending(p.get<std::string>());
  for (const auto& m : r.value("measurements", json::array())) {
    const std::string name = m.at("name");
    const json& v = m.at("value");
    if (v.is_boolean())
      ctx.measure_bool(name, v.get<bool>());
    else if (v.is_number())
      ctx.measure(name, v.get<double>(), m.at("unit").get<std::string>());
    else  // null (a NaN from Python) or anything else: not a measurement
      ctx.measure(name, std::nan(""), m.value("unit", "count"));
  }
}

ScratchDir::ScratchDir(const std::string& tag) {
  std::random_device rd;
  path_ =
      fs::temp_directory_path() / ("claimcheck_" + tag + "_" + std::to_string(getpid()) + "_" + std::to_string(rd()));
  fs::create_directories(path_);
}
ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace claimcheck
