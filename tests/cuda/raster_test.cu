// Host check of tilec::rasterize (stdlib/tilec/raster.cuh), the block order of T.use_swizzle: for every grid
// up to 40 x 40 and panel 1..9 it is a bijection of the grid, and launch-order neighbours inside a panel
// move down one row or to the next column's first row. Built and run by ctest through nvcc (no GPU needed).
#include "tilec/raster.cuh"

#include <cstdio>
#include <vector>

int main() {
    int bad = 0;
    for (int gx = 1; gx <= 40; ++gx)
        for (int gy = 1; gy <= 40; ++gy)
            for (int panel = 1; panel <= 9; ++panel) {
                std::vector<int> seen(gx * gy, 0);
                int px = -1, py = -1;
                for (int by = 0; by < gy; ++by)
                    for (int bx = 0; bx < gx; ++bx) {
                        int x = -1, y = -1;
                        tilec::rasterize(panel, bx, by, gx, gy, x, y);
                        if (x < 0 || x >= gx || y < 0 || y >= gy) {
                            if (bad++ < 5) std::printf("grid %dx%d panel %d: (%d,%d) -> (%d,%d) outside\n", gx, gy, panel, bx, by, x, y);
                            continue;
                        }
                        ++seen[y * gx + x];
                        bool samePanel = px >= 0 && y / panel == py / panel;
                        bool local = !samePanel || (x == px && y == py + 1) || (x == px + 1 && y % panel == 0);
                        if (!local && bad++ < 5)
                            std::printf("grid %dx%d panel %d: (%d,%d) after (%d,%d) jumps\n", gx, gy, panel, x, y, px, py);
                        px = x, py = y;
                    }
                for (int i = 0; i < gx * gy; ++i)
                    if (seen[i] != 1 && bad++ < 5)
                        std::printf("grid %dx%d panel %d: tile %d computed %d times\n", gx, gy, panel, i, seen[i]);
            }
    std::printf("rasterize: %s\n", bad ? "FAIL" : "PASS");
    return bad ? 1 : 0;
}
