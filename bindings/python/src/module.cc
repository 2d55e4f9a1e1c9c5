// weft_torch._C: the extension module. Importing weft_torch imports torch.distributed first
// (ProcessGroup and Store must be registered with pybind11 before this module's types).
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group.hpp"
#include "types.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "weft's torch.distributed backend (see weft_torch)";
  py::class_<weft_torch::ProcessGroupWeft, c10d::ProcessGroup,
             c10::intrusive_ptr<weft_torch::ProcessGroupWeft>>(m, "ProcessGroupWeft");
  m.def("create_process_group", &weft_torch::ProcessGroupWeft::create, py::arg("store"),
        py::arg("rank"), py::arg("size"), py::arg("timeout"),
        py::call_guard<py::gil_scoped_release>(),
        "Joins a weft communicator of `size` ranks through the group's store: what "
        "torch.distributed calls for backend 'weft'.");
  m.def("supported_dtypes", &weft_torch::supportedDtypeNames,
        "Names of the torch dtypes the backend moves and reduces.");
  m.def("weft_version", [] {
    int v = 0;
    weftGetVersion(&v);
    return v;
  });
}
