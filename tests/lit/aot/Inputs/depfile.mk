# depfile.test's build with make: the nvcc-like pattern rule, the depfiles included.
%.cu %.h: %.tile
	$(TILEC) $< -o $*.cu -MD -MF $*.d
all: add.cu
-include add.d
