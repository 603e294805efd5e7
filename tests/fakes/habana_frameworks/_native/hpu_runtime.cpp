// The habana_frameworks test double's device runtime: what the real bridge's C++ library registers with
// torch for the "hpu" device type, reduced to what stock CPU torch needs before it will keep tensors on
// that device (it has no Python API for either registry):
//   - a DeviceGuardImpl for HPU (current device index, one default stream per device, no events):
//     autograd reads the device's stream for every tensor it records, Tensor.to("hpu") asks the current
//     device index;
//   - the HPU hooks (the HPU accelerator is "built" and present): autograd's engine asks the current
//     accelerator for its stream.
// No memory or kernels live here: the double's HPU tensors hold host tensors (habana_frameworks/_tensor.py).
#include <ATen/detail/HPUHooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <atomic>

namespace {

std::atomic<int> g_device_count{1};
std::atomic<c10::DeviceIndex> g_current{0};  // process-wide, like the bridge's hpu.set_device

c10::Device hpu(c10::DeviceIndex index) {
  return c10::Device(c10::DeviceType::HPU, index);
}

struct FakeHPUGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::HPU; }
  c10::Device exchangeDevice(c10::Device d) const override {
    return hpu(g_current.exchange(d.index()));
  }
  c10::Device getDevice() const override { return hpu(g_current); }
  void setDevice(c10::Device d) const override { g_current = d.index(); }
  void uncheckedSetDevice(c10::Device d) const noexcept override { g_current = d.index(); }
  c10::Stream getStream(c10::Device d) const override { return c10::Stream(c10::Stream::DEFAULT, d); }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const override {
    return c10::Stream(c10::Stream::DEFAULT, s.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(g_device_count.load());
  }
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
};

}  // namespace

C10_REGISTER_GUARD_IMPL(HPU, FakeHPUGuardImpl);

namespace at {

struct FakeHPUHooks final : public HPUHooksInterface {
  explicit FakeHPUHooks(HPUHooksArgs) {}
  void init() const override {}
  // Built while devices are declared: a double that was unloaded (retire) leaves torch without an accelerator.
  bool isBuilt() const override { return g_device_count.load() > 0; }
  bool isAvailable() const override { return g_device_count.load() > 0; }
  bool hasHPU() const override { return g_device_count.load() > 0; }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(g_device_count.load());
  }
  c10::DeviceIndex getCurrentDevice() const override { return g_current.load(); }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  bool isPinnedPtr(const void*) const override { return false; }
};

C10_REGISTER_TYPED_CLASS(HPUHooksRegistry, "HPUHooks", FakeHPUHooks);

}  // namespace at

extern "C" void hpubench_fake_hpu_set_device_count(int count) {
  g_device_count.store(count);
}
