# restat.test's build with make: GNU make rebuilds what depends on a target only when the target's mtime
# changed, so a .cu tilec left untouched rebuilds nothing after it (the "compile" step stands for nvcc).
add.o: add.cu
	cp add.cu add.o && echo COMPILED add.o
add.cu add.h: add.tile
	$(TILEC) add.tile -o add.cu -MD -MP -MF add.d
-include add.d
