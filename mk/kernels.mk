# make check-kernels [KERNELS="5.10 6.1 6.12"]: a chosen set of the integration tests on Debian's
# cloud kernels booted in qemu (scripts/check-kernels.sh; the kernels are cached outside the tree)
KERNELS ?= 5.10 6.1 6.12
.PHONY: check-kernels
check-kernels: tracer $(OUTPUT)/targets/pipeline
	$(Q)scripts/as-root.sh scripts/check-kernels.sh $(OUTPUT) $(KERNELS)
