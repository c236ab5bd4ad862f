# torchvision's wheel for the pinned release is a CUDA build whose C++ ops do
# not load on the CPU torch; its import then needs the schemas of the two ops it
# registers fake kernels for.  Define them (only when missing) before any test
# module imports torchvision.  Nothing in site-packages is changed.
from torch_overlay.torchvision_env import prepare

prepare()
