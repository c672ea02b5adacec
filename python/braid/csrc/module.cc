// The Python module of the native backend: braid._pg_torch<major><minor>, built for one
// torch version (python/braid/_torch_native.py picks the one for the running torch).
//
//   load(path)                         resolves braid.h's functions from libbraid at path
//   ProcessGroupBraid(store, rank, size, timeout)
//                                      the group (1.13) or backend (2.x); a subclass of
//                                      torch's ProcessGroup / Backend type
//   TORCH_VERSION                      the torch the module was built against
//
// Errors: the backend's Error becomes braid.errors' class for its code (BraidTimeoutError,
// InvalidArgumentError, ...), TypeError a Python TypeError.
#include <torch/csrc/utils/pybind.h>
#include <pybind11/chrono.h>

#include "braid_api.h"
#include "process_group_braid.h"

#ifndef BRAID_TORCH_MODULE
#error "BRAID_TORCH_MODULE names the module (braid._pg_torch<major><minor>)"
#endif

namespace py = pybind11;

namespace braid::torch_ext {
namespace {

// A holder that drops its reference without the GIL: destroying a group joins its worker
// thread, which may be running a future's callback that takes the GIL. Its layout is one
// c10::intrusive_ptr, as torch's holders of ProcessGroup and Backend.
template <typename T>
class NoGilHolder {
 public:
  NoGilHolder() = default;
  NoGilHolder(c10::intrusive_ptr<T> ptr) : ptr_(std::move(ptr)) {}  // NOLINT: implicit
  explicit NoGilHolder(T* raw) : ptr_(c10::intrusive_ptr<T>::unsafe_steal_from_new(raw)) {}
  NoGilHolder(const NoGilHolder&) = default;
  NoGilHolder(NoGilHolder&&) noexcept = default;
  NoGilHolder& operator=(const NoGilHolder&) = default;
  NoGilHolder& operator=(NoGilHolder&&) noexcept = default;
  ~NoGilHolder() {
    if (ptr_ && PyGILState_Check()) {
      py::gil_scoped_release release;
      ptr_.reset();
    }
  }
  T* get() const noexcept {
    return ptr_.get();
  }
  T& operator*() const noexcept {
    return *ptr_;
  }
  T* operator->() const noexcept {
    return ptr_.get();
  }

 private:
  c10::intrusive_ptr<T> ptr_;
};

}  // namespace
}  // namespace braid::torch_ext

PYBIND11_DECLARE_HOLDER_TYPE(T, braid::torch_ext::NoGilHolder<T>, true);

namespace braid::torch_ext {
namespace {

PyObject* g_fromCode = nullptr;  // braid.errors.from_code, kept for the module's life

void translate(std::exception_ptr p) {
  try {
    if (p) {
      std::rethrow_exception(p);
    }
  } catch (const Error& e) {
    PyObject* exc = PyObject_CallFunction(g_fromCode, "is", e.code(), e.what());
    if (exc == nullptr) {
      return;  // from_code raised: that error stands
    }
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
    Py_DECREF(exc);
  } catch (const TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  }
}

}  // namespace
}  // namespace braid::torch_ext

PYBIND11_MODULE(BRAID_TORCH_MODULE, m) {
  using braid::torch_ext::NoGilHolder;
  using braid::torch_ext::ProcessGroupBraid;
  namespace ext = braid::torch_ext;
  py::module_::import("torch.distributed");  // torch's ProcessGroup / Backend types
  py::object fromCode = py::module_::import("braid.errors").attr("from_code");
  ext::g_fromCode = fromCode.release().ptr();
  py::register_exception_translator(&ext::translate);

  m.attr("TORCH_VERSION") = TORCH_VERSION;
  m.def("load", &ext::load, py::arg("path"),
        "Resolves braid.h's functions from the libbraid.so at path (braid._lib.path).");

  py::class_<ProcessGroupBraid, ext::BackendBase, NoGilHolder<ProcessGroupBraid>>(
      m, "ProcessGroupBraid",
      "torch.distributed's backend \"braid\" in C++ over Braid's C API (docs/torch.md).")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout) {
             return c10::make_intrusive<ProcessGroupBraid>(store, rank, size, timeout);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly(
          "comm_handle",
          [](const ProcessGroupBraid& pg) { return reinterpret_cast<uintptr_t>(pg.comm()); },
          "The braidComm_t as an int (owned by the group; 0 once shut down).")
      .def("getBackendName", &ProcessGroupBraid::getBackendName)
      .def_property_readonly_static("implementation",
                                    [](py::object) { return ProcessGroupBraid::implementation(); })
      // The Python group's signatures: a tag is optional (torch's bindings want one).
      .def(
          "send",
          [](ProcessGroupBraid& pg, std::vector<at::Tensor>& tensors, int dstRank, int tag) {
            return pg.send(tensors, dstRank, tag);
          },
          py::arg("tensors"), py::arg("dstRank"), py::arg("tag") = 0,
          py::call_guard<py::gil_scoped_release>())
      .def(
          "recv",
          [](ProcessGroupBraid& pg, std::vector<at::Tensor>& tensors, int srcRank, int tag) {
            return pg.recv(tensors, srcRank, tag);
          },
          py::arg("tensors"), py::arg("srcRank"), py::arg("tag") = 0,
          py::call_guard<py::gil_scoped_release>())
      .def(
          "recv_anysource",
          [](ProcessGroupBraid& pg, std::vector<at::Tensor>& tensors, int tag) {
            return pg.recvAnysource(tensors, tag);
          },
          py::arg("tensors"), py::arg("tag") = 0, py::call_guard<py::gil_scoped_release>())
#if !BRAID_TORCH_2
      // torch 1.13's ProcessGroup has neither; 2.x's Backend binds its own.
      .def("abort", &ProcessGroupBraid::abort, py::call_guard<py::gil_scoped_release>())
      .def("shutdown", &ProcessGroupBraid::shutdown, py::call_guard<py::gil_scoped_release>())
#endif
      ;
}
