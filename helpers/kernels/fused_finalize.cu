// fused_finalize: one block adds fused_step's per-block partials in double precision: the dangling mass of
// the new ranks goes to scalars[0] for the next iteration, the L1 change to changes[iteration].
// A second tiny launch instead of atomics from every block: same-address atomics serialise.
extern "C" __global__ void fused_finalize(const float* partials, int blocks, float* scalars, float* changes,
                                          int iteration) {
    __shared__ double warp_dangling[32], warp_change[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    double dangling = 0.0, change = 0.0;
    for (int b = threadIdx.x; b < blocks; b += blockDim.x) {
        dangling += partials[2 * b];
        change += partials[2 * b + 1];
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        dangling += __shfl_down_sync(0xffffffffu, dangling, offset);
        change += __shfl_down_sync(0xffffffffu, change, offset);
    }
    if (lane == 0) { warp_dangling[warp] = dangling; warp_change[warp] = change; }
    __syncthreads();
    if (warp == 0) {
        int warps = blockDim.x / 32;
        dangling = lane < warps ? warp_dangling[lane] : 0.0;
        change = lane < warps ? warp_change[lane] : 0.0;
        for (int offset = 16; offset > 0; offset /= 2) {
            dangling += __shfl_down_sync(0xffffffffu, dangling, offset);
            change += __shfl_down_sync(0xffffffffu, change, offset);
        }
        if (lane == 0) { scalars[0] = (float)dangling; changes[iteration] = (float)change; }
    }
}
