// SHA-256 through OpenSSL's EVP interface: the data revision (records) and weight hashes (kernels).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

namespace claimcheck {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  void update(const void* data, std::size_t n);
  void update(const std::string& s) { update(s.data(), s.size()); }
  std::string hex();  // finalises: lower-case hex of the 32-byte digest

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace claimcheck
