"""The TPU compile study: deviceless compiles with libtpu, VMEM and estimated cycles per configuration."""
