#include "claimcheck/base/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace claimcheck {

struct Sha256::Ctx {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  ~Ctx() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Ctx>()) {
  if (!ctx_->md || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: OpenSSL's EVP_DigestInit_ex failed");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, std::size_t n) {
  if (n && EVP_DigestUpdate(ctx_->md, data, n) != 1) throw std::runtime_error("sha256: EVP_DigestUpdate failed");
}

std::string Sha256::hex() {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(ctx_->md, d, &n) != 1) throw std::runtime_error("sha256: EVP_DigestFinal_ex failed");
  static const char* k = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += k[d[i] >> 4];
    out += k[d[i] & 15];
  }
  return out;
}

}  // namespace claimcheck
