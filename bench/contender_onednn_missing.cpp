// The oneDNN contender when the build found no oneDNN (Debian libdnnl-dev): recorded at every
// point as missing, with the reason, so the study still completes.
#include "contender.hpp"

namespace attnbench::bench {

namespace {

class MissingContender : public Contender {
 public:
  const Description& describe() const override { return description_; }
  std::string unsupported(const ContenderPoint&) const override {
    return "missing: oneDNN (libdnnl-dev) was not found when attnbench_bench was built";
  }
  void prepare(const ContenderPoint&, const Tensors&) override {}
  void run() override {}
  std::size_t scratch_bytes() const override { return 0; }
  void release() override {}

 private:
  Description description_{.name = "onednn/primitives",
                           .role = "peer",
                           .library = "oneDNN",
                           .version = "not found",
                           .threading = "",
                           .fused = false,
                           .how = ""};
};

}  // namespace

std::unique_ptr<Contender> onednn_contender() { return std::make_unique<MissingContender>(); }

}  // namespace attnbench::bench
