// Helpers for checks that exchange data with other programs: .npy files and Python drivers.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace claimcheck {

class Context;

// The interpreter the Python checks use: $CLAIMCHECK_PYTHON, else the one the build was configured with
// (whose torch is the build's LibTorch: ci/setup-python.sh), else python3 on PATH.
std::string python_interpreter();

// NumPy .npy (version 1.0, little-endian, C order) for float32 and float64.
void write_npy(const std::filesystem::path& p, const float* data, const std::vector<long>& shape);
void write_npy(const std::filesystem::path& p, const double* data, const std::vector<long>& shape);
// Reads an .npy of that dtype; throws std::runtime_error naming the file on any mismatch.
std::vector<float> read_npy_f32(const std::filesystem::path& p, std::vector<long>* shape = nullptr);
std::vector<double> read_npy_f64(const std::filesystem::path& p, std::vector<long>* shape = nullptr);

// Runs a Python driver (a path relative to the repository root) and returns the JSON object it printed
// last on stdout. The driver protocol (checks/pydriver.py): {"measurements": [{"name", "value", "unit"}],
// "derived": [...], "details": {...}, "assumptions": [...], "skip": "reason"}. Throws on a crash.
nlohmann::json run_python_driver(const Context& ctx, const std::string& script, const std::vector<std::string>& args);
// Records a driver's result on the context: measurements, derived values, details, assumptions;
// a "skip" field skips the check with its reason.
void forward_driver_result(Context& ctx, const nlohmann::json& result);

// A scratch folder for one check, removed when the object goes.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace claimcheck
