// blocked: lecture 22. The blocked iteration's pass over vertices. The in-links are split by
// source into segments whose values fit in half of this GPU's L2; acc is zeroed (a memset), then
// pull_segmented runs once per segment, in order, adding each segment's sums into acc while that
// segment's values stay cached. blocked_update then makes ONE pass over vertices: new rank, the
// next state x (rank / out-degree, or the rank itself for a dangling vertex: one vector instead of
// rank and contributions), this block's shares of the dangling mass and the L1 change; the last
// block adds every share in double precision and runs the stop test. It only reads acc: with
// acc[v] = 0 written here as well, blocked_update alone took about 10x as long on an H200 (R-MAT,
// 39M vertices; a memset of acc takes a small part of that). Lecture 22 times the whole iteration
// both ways on the GPU at hand. Launch with 256 threads per block.
#define THREADS 256
#define WARPS (THREADS / 32)
#define FULL 0xffffffffu

template <typename T> __device__ __forceinline__ T warp_sum(T x) {
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(FULL, x, offset);
    return x;
}

// --- part 2: the pass over vertices, and the last block's sums
extern "C" __global__ void blocked_update(const float* acc, const int* out_degree, const float* x,
                                          float* new_x, float* partials, int* finished,
                                          float* scalars, int* state, float* changes, int history,
                                          float tol, int max_iter, int n, float d) {
    __shared__ float shared_dangling[WARPS], shared_change[WARPS];
    __shared__ double shared_total[2][WARPS];
    __shared__ bool last;
    if (state[0]) return;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float base = (d * scalars[0] + (1.0f - d)) / n;
    float dangling = 0.0f, change = 0.0f;
    for (long long v = (long long)blockIdx.x * THREADS + threadIdx.x; v < n;
         v += (long long)gridDim.x * THREADS) {
        int degree = out_degree[v];
        float r = d * acc[v] + base;
        float old = degree > 0 ? x[v] * degree : x[v];
        new_x[v] = degree > 0 ? r / degree : r;
        dangling += degree == 0 ? r : 0.0f;
        change += fabsf(r - old);
    }
    dangling = warp_sum(dangling);
    change = warp_sum(change);
    if (lane == 0) { shared_dangling[warp] = dangling; shared_change[warp] = change; }
    __syncthreads();
    if (threadIdx.x == 0) {
        float block_dangling = 0.0f, block_change = 0.0f;
        for (int w = 0; w < WARPS; ++w) {
            block_dangling += shared_dangling[w];
            block_change += shared_change[w];
        }
        partials[2 * blockIdx.x] = block_dangling;
        partials[2 * blockIdx.x + 1] = block_change;
        __threadfence();
        last = atomicAdd(finished, 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;                              // block-uniform
    __threadfence();
    double total_dangling = 0.0, total_change = 0.0;
    for (int b = threadIdx.x; b < gridDim.x; b += THREADS) {
        total_dangling += ((volatile float*)partials)[2 * b];
        total_change += ((volatile float*)partials)[2 * b + 1];
    }
    total_dangling = warp_sum(total_dangling);
    total_change = warp_sum(total_change);
    if (lane == 0) { shared_total[0][warp] = total_dangling; shared_total[1][warp] = total_change; }
    __syncthreads();
    if (threadIdx.x == 0) {
        total_dangling = 0.0;
        total_change = 0.0;
        for (int w = 0; w < WARPS; ++w) {
            total_dangling += shared_total[0][w];
            total_change += shared_total[1][w];
        }
        int count = state[1];
        scalars[0] = (float)total_dangling;
        changes[count % history] = (float)total_change;
        state[1] = count + 1;
        if (total_change < tol) state[0] = 1;
        else if (max_iter > 0 && count + 1 >= max_iter) state[0] = 2;
        *finished = 0;
    }
}
