// blocked: lecture 22. The blocked iteration: the in-links are split by source into segments whose
// values fit in half of this GPU's L2, and blocked_pass runs once per segment, in order, so that
// the segment's gathered values stay cached while its in-link indices stream past (read with
// evict-first loads, __ldcs, so they do not push the values out). A pass walks the rows its segment
// touches in work items, as the fused kernel does (heavy rows split over blocks, a warp per medium
// row, a thread per light row) and ADDS each row's sum to acc[row]: rows are distinct within a
// segment and segments run one after another, so no atomics are needed and the order of additions
// never changes. blocked_update is the one pass over vertices: new rank, the next state x (rank /
// out-degree, or the rank itself for a dangling vertex: one vector instead of rank and
// contributions), this block's shares of the dangling mass and the L1 change (it also zeroes acc
// for the next iteration), and the last block adds every share in double precision and runs the
// stop test. Launch both with 256 threads per block.
#define THREADS 256
#define WARPS (THREADS / 32)
#define LIGHT_MAX 32
#define FULL 0xffffffffu

template <typename T> __device__ __forceinline__ T warp_sum(T x) {
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(FULL, x, offset);
    return x;
}

__device__ __forceinline__ float gather(const int* sources, const float* x, long long k) {
    return x[__ldcs(sources + k)];                  // evict-first index load, cached gather
}

// --- part 2: one segment's pass, in work items as the fused kernel walks them
extern "C" __global__ void blocked_pass(const int* rows, const int* offsets, const int* sources,
                                        int num_rows, const float* x, float* acc,
                                        const int* medium, int num_medium, const int4* heavy,
                                        int num_heavy, const int2* groups, float* part_sums,
                                        int* arrivals, const int* state) {
    __shared__ float shared_sum[WARPS];
    if (state[0]) return;                           // stopped: nothing changes any more
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int medium_items = (num_medium + WARPS - 1) / WARPS;
    int items = num_heavy + medium_items + (num_rows + THREADS - 1) / THREADS;
    for (int item = blockIdx.x; item < items; item += gridDim.x) {     // block-uniform
        int row = -1;                               // the local row this thread completes, if any
        float sum = 0.0f;
        if (item < num_heavy) {                     // one heavy task, the whole block
            int4 task = heavy[item];                // local row, first in-link, end, group or -1
            float part = 0.0f;
            for (long long k = task.y + threadIdx.x; k < task.z; k += THREADS) {
                part += gather(sources, x, k);
            }
            part = warp_sum(part);
            if (lane == 0) shared_sum[warp] = part;
            __syncthreads();
            if (threadIdx.x == 0) {
                part = 0.0f;
                for (int w = 0; w < WARPS; ++w) part += shared_sum[w];
                if (task.w < 0) {
                    row = task.x;
                    sum = part;
                } else {                            // one part of a split row
                    int2 group = groups[task.w];    // its first task, its number of tasks
                    part_sums[item] = part;
                    __threadfence();
                    if (atomicAdd(&arrivals[task.w], 1) == group.y - 1) {    // the last part
                        __threadfence();
                        for (int p = 0; p < group.y; ++p) {
                            sum += ((volatile float*)part_sums)[group.x + p];
                        }
                        arrivals[task.w] = 0;
                        row = task.x;
                    }
                }
            }
            __syncthreads();
        } else if (item < num_heavy + medium_items) {   // one warp per medium row
            int i = (item - num_heavy) * WARPS + warp;
            if (i < num_medium) {                   // warp-uniform
                int r = medium[i];
                float part = 0.0f;
                for (long long k = offsets[r] + lane; k < offsets[r + 1]; k += 32) {
                    part += gather(sources, x, k);
                }
                part = warp_sum(part);
                if (lane == 0) { row = r; sum = part; }
            }
        } else {                                    // light rows: a thread each, 32 per warp
            long long r = (long long)(item - num_heavy - medium_items) * THREADS + threadIdx.x;
            if (r < num_rows) {
                int begin = offsets[r], end = offsets[r + 1];
                if (end - begin <= LIGHT_MAX) {
                    for (int k = begin; k < end; ++k) sum += gather(sources, x, k);
                    row = (int)r;
                }
            }
        }
        if (row >= 0) acc[rows[row]] += sum;
    }
}

// --- part 3: the pass over vertices, and the last block's sums
extern "C" __global__ void blocked_update(float* acc, const int* out_degree, const float* x,
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
        acc[v] = 0.0f;                              // ready for the next iteration's passes
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
