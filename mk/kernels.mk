# make check-kernels [KERNELS="5.10 6.1 6.12"]: a chosen set of the integration tests on Debian's
# cloud kernels booted in qemu (scripts/check-kernels.sh; the kernels are cached outside the tree)
KERNELS ?= 5.10 6.1 6.12
.PHONY: check-kernels
# the targets the tests in the VM run (CI builds this tree for the leg alone: nothing else made)
check-kernels: tracer $(OUTPUT)/targets/pipeline $(TARGET_BINS)
	$(Q)scripts/as-root.sh scripts/check-kernels.sh $(OUTPUT) $(KERNELS)
