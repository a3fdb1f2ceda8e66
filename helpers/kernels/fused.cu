// fused: lecture 21. a whole PageRank iteration in ONE launch, balanced by in-degree. The work
// comes in items: heavy tasks (a block each: at most a fixed number of in-links of one heavy
// vertex; a vertex with more is split, and the block that adds the last part sums the parts in task
// order), medium vertices (a warp each, 8 to an item) and light vertices (at most 32 in-links,
// taken by id, a thread each, 256 to an item). A grid of about one wave of blocks walks the items
// (heavy first): few blocks, so few shares to add at the end. Whoever completes a vertex writes its
// new rank and next contribution, and adds to its block's share of the new dangling mass and L1
// change; the LAST block to finish adds all shares in double precision, in a fixed order, keeps the
// dangling mass for the next iteration, records the change and runs the stop test: state[0] becomes
// 1 (change < tol) or 2 (max_iter reached; <= 0: no limit), after which every block of a later
// launch returns at once, so replaying extra iterations of a CUDA graph changes nothing.
// Deterministic: no float atomics. Launch with 256 threads per block.
#define THREADS 256
#define WARPS (THREADS / 32)
#define LIGHT_MAX 32
#define FULL 0xffffffffu

__device__ __forceinline__ float warp_sum(float x) {
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(FULL, x, offset);
    return x;
}

__device__ __forceinline__ double warp_sum(double x) {
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(FULL, x, offset);
    return x;
}

extern "C" __global__ void fused(const int* in_offsets, const int* in_sources, const int* out_degree,
                                      const float* contrib, const float* rank, float* new_rank, float* new_contrib,
                                      const int* medium, int num_medium, const int4* heavy, int num_heavy,
                                      const int2* groups, float* part_sums, int* arrivals, float* partials,
                                      int* finished, float* scalars, int* state, float* changes, int history,
                                      float tol, int max_iter, int n, float d) {
    __shared__ float shared_sum[WARPS], shared_dangling[WARPS], shared_change[WARPS];
    __shared__ double shared_total[2][WARPS];
    __shared__ bool last;
    if (state[0]) return;                                   // stopped: the same answer for every block
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int medium_items = (num_medium + WARPS - 1) / WARPS;
    int items = num_heavy + medium_items + (n + THREADS - 1) / THREADS;
    float base = (d * scalars[0] + (1.0f - d)) / n;
    float dangling = 0.0f, change = 0.0f;                   // this thread's share, over all its items
    for (int item = blockIdx.x; item < items; item += gridDim.x) {   // block-uniform
        int v = -1;                                         // the vertex this thread completes, if any
        float sum = 0.0f;
        if (item < num_heavy) {                             // one heavy task, the whole block
            int4 task = heavy[item];                        // vertex, first in-link, end, split group or -1
            float part = 0.0f;
            #pragma unroll 4
            for (long long k = task.y + threadIdx.x; k < task.z; k += THREADS) part += contrib[in_sources[k]];
            part = warp_sum(part);
            if (lane == 0) shared_sum[warp] = part;
            __syncthreads();
            if (threadIdx.x == 0) {
                part = 0.0f;
                for (int w = 0; w < WARPS; ++w) part += shared_sum[w];
                if (task.w < 0) {
                    v = task.x;
                    sum = part;
                } else {                                    // one part of a split vertex
                    int2 group = groups[task.w];            // its first task, its number of tasks
                    part_sums[item] = part;
                    __threadfence();                        // the part is visible before this block arrives
                    if (atomicAdd(&arrivals[task.w], 1) == group.y - 1) {   // the last part to arrive
                        __threadfence();
                        for (int p = 0; p < group.y; ++p) sum += ((volatile float*)part_sums)[group.x + p];
                        arrivals[task.w] = 0;               // ready for the next iteration
                        v = task.x;
                    }
                }
            }
            __syncthreads();                                // shared_sum is free for the next item
        } else if (item < num_heavy + medium_items) {       // one warp per medium vertex
            int i = (item - num_heavy) * WARPS + warp;
            if (i < num_medium) {                           // warp-uniform
                int u = medium[i];
                float part = 0.0f;
                #pragma unroll 4
                for (long long k = in_offsets[u] + lane; k < in_offsets[u + 1]; k += 32) part += contrib[in_sources[k]];
                part = warp_sum(part);
                if (lane == 0) { v = u; sum = part; }
            }
        } else {                                            // light vertices: 32 consecutive ids per warp
            long long mine = ((long long)(item - num_heavy - medium_items) * WARPS + warp) * 32 + lane;
            int begin = 0, length = 0;
            if (mine < n) {
                begin = in_offsets[mine];
                int degree = in_offsets[mine + 1] - begin;
                if (degree <= LIGHT_MAX) { length = degree; v = (int)mine; }    // heavier ones have their own
            }
            #pragma unroll 4
            for (int k = begin; k < begin + length; ++k) sum += contrib[in_sources[k]];
        }
        if (v >= 0) {
            float r = d * sum + base;
            int degree = out_degree[v];
            new_rank[v] = r;
            new_contrib[v] = degree > 0 ? r / degree : 0.0f;
            dangling += degree == 0 ? r : 0.0f;
            change += fabsf(r - rank[v]);
        }
    }
    dangling = warp_sum(dangling);                          // every thread of the block reaches this
    change = warp_sum(change);
    if (lane == 0) { shared_dangling[warp] = dangling; shared_change[warp] = change; }
    __syncthreads();
    if (threadIdx.x == 0) {
        float block_dangling = 0.0f, block_change = 0.0f;
        for (int w = 0; w < WARPS; ++w) { block_dangling += shared_dangling[w]; block_change += shared_change[w]; }
        partials[2 * blockIdx.x] = block_dangling;
        partials[2 * blockIdx.x + 1] = block_change;
        __threadfence();                                    // the shares are visible before this block arrives
        last = atomicAdd(finished, 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;                                      // block-uniform
    __threadfence();
    double total_dangling = 0.0, total_change = 0.0;        // the last block adds every block's shares
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
        for (int w = 0; w < WARPS; ++w) { total_dangling += shared_total[0][w]; total_change += shared_total[1][w]; }
        int count = state[1];
        scalars[0] = (float)total_dangling;
        changes[count % history] = (float)total_change;
        state[1] = count + 1;
        if (total_change < tol) state[0] = 1;
        else if (max_iter > 0 && count + 1 >= max_iter) state[0] = 2;
        *finished = 0;                                      // ready for the next iteration
    }
}
