// fused_finalize: one block adds fused_step's per-block partials in double precision: the dangling mass of
// the new ranks goes to scalars[0] for the next iteration and the L1 change to the history. The stop test
// runs here, on the GPU: state[0] becomes 1 once the change is below tol, 2 once max_iter iterations have
// run (max_iter <= 0: no limit), and from then on fused_step and fused_finalize do nothing. state[1] counts
// the iterations; changes[] keeps the last `history` L1 changes. A second tiny launch instead of atomics
// from every block: same-address atomics serialise. Launch with one block of 1024 threads.
extern "C" __global__ void fused_finalize(const float* partials, int blocks, float* scalars, int* state,
                                          float* changes, int history, float tol, int max_iter) {
    __shared__ double warp_dangling[32], warp_change[32];
    if (state[0]) return;
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
        if (lane == 0) {
            int count = state[1];
            scalars[0] = (float)dangling;
            changes[count % history] = (float)change;
            state[1] = count + 1;
            if (change < tol) state[0] = 1;
            else if (max_iter > 0 && count + 1 >= max_iter) state[0] = 2;
        }
    }
}
