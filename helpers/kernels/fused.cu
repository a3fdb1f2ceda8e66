// fused: lecture 21. A whole PageRank iteration in ONE launch, balanced by in-degree. The work
// comes in items: heavy tasks (a block each: at most a fixed number of in-links of one heavy
// vertex; a vertex with more is split, and the block that adds the last part sums the parts in task
// order), medium vertices (a warp each, 8 to an item) and light vertices (at most 32 in-links,
// taken by id, a thread each, 256 to an item). About one wave of blocks walks the items (heavy
// first). Whoever completes a vertex writes its new rank and next contribution and adds to its
// block's share of the dangling mass and L1 change; the LAST block to finish adds all shares in
// double precision, in a fixed order, and runs the stop test (state[0]: 1 met tol, 2 reached
// max_iter), after which a later launch returns at once. No float atomics. 256 threads per block.
#define THREADS 256
#define WARPS (THREADS / 32)
#define LIGHT_MAX 32
#define FULL 0xffffffffu

template <typename T> __device__ __forceinline__ T warp_sum(T x) {
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(FULL, x, offset);
    return x;
}

// A heavy task (the whole block): vertex task.x, in-links task.y..z, split group task.w or -1.
__device__ int heavy_item(int4 task, int item, const int* in_sources, const float* contrib,
                          const int2* groups, float* part_sums, int* arrivals,
                          float* shared_sum, float& sum) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, v = -1;
    float part = 0.0f;
    #pragma unroll 4
    for (long long k = task.y + threadIdx.x; k < task.z; k += THREADS)
        part += contrib[in_sources[k]];
    part = warp_sum(part);
    if (lane == 0) shared_sum[warp] = part;
    __syncthreads();
    if (threadIdx.x == 0) {
        part = 0.0f;
        for (int w = 0; w < WARPS; ++w) part += shared_sum[w];
        if (task.w < 0) {
            v = task.x;
            sum = part;
        } else {                                        // one part of a split vertex
            int2 group = groups[task.w];                // its first task, its number of tasks
            part_sums[item] = part;
            __threadfence();                            // the part is visible before this arrives
            if (atomicAdd(&arrivals[task.w], 1) == group.y - 1) {   // the last part to arrive
                __threadfence();
                for (int p = 0; p < group.y; ++p) sum += ((volatile float*)part_sums)[group.x + p];
                arrivals[task.w] = 0;                   // ready for the next iteration
                v = task.x;
            }
        }
    }
    __syncthreads();                                    // shared_sum is free for the next item
    return v;                                           // completed by thread 0, or -1
}

// A medium vertex: one warp, lanes striding by 32, then a shuffle tree; lane 0 completes it.
__device__ int medium_item(int u, const int* in_offsets, const int* in_sources,
                           const float* contrib, float& sum) {
    int lane = threadIdx.x % 32;
    float part = 0.0f;
    #pragma unroll 4
    for (long long k = in_offsets[u] + lane; k < in_offsets[u + 1]; k += 32) {
        part += contrib[in_sources[k]];
    }
    part = warp_sum(part);
    if (lane != 0) return -1;
    sum = part;
    return u;
}

// A light vertex (at most LIGHT_MAX in-links): one thread. Heavier ones have items of their own.
__device__ int light_item(long long v, int n, const int* in_offsets, const int* in_sources,
                          const float* contrib, float& sum) {
    if (v >= n) return -1;
    int begin = in_offsets[v], degree = in_offsets[v + 1] - begin;
    if (degree > LIGHT_MAX) return -1;
    #pragma unroll 4
    for (int k = begin; k < begin + degree; ++k) sum += contrib[in_sources[k]];
    return (int)v;
}
// --- part 2: the last block to finish adds every block's shares and runs the stop test
__device__ void finish(float dangling, float change, float* partials, int* finished,
                       float* scalars, int* state, float* changes, int history, float tol,
                       int max_iter) {
    __shared__ float shared_dangling[WARPS], shared_change[WARPS];
    __shared__ double shared_total[2][WARPS];
    __shared__ bool last;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    dangling = warp_sum(dangling);                      // every thread of the block reaches this
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
        // the shares are visible before this arrives
        __threadfence();
        last = atomicAdd(finished, 1) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;                                  // block-uniform
    __threadfence();
    double total_dangling = 0.0, total_change = 0.0;    // the last block adds every block's shares
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
        scalars[0] = (float)total_dangling;             // the dangling mass the next iteration uses
        changes[count % history] = (float)total_change;
        state[1] = count + 1;
        if (total_change < tol) state[0] = 1;
        else if (max_iter > 0 && count + 1 >= max_iter) state[0] = 2;
        *finished = 0;                                  // ready for the next iteration
    }
}
// --- part 3: the kernel walks its items, updates what it completes, and finishes
extern "C" __global__ void fused(const int* in_offsets, const int* in_sources,
                                 const int* out_degree, const float* contrib, const float* rank,
                                 float* new_rank, float* new_contrib, const int* medium,
                                 int num_medium, const int4* heavy, int num_heavy,
                                 const int2* groups, float* part_sums, int* arrivals,
                                 float* partials, int* finished, float* scalars, int* state,
                                 float* changes, int history, float tol, int max_iter, int n,
                                 float d) {
    __shared__ float shared_sum[WARPS];
    if (state[0]) return;                               // stopped: the same answer for every block
    int warp = threadIdx.x / 32;
    int medium_items = (num_medium + WARPS - 1) / WARPS;
    int items = num_heavy + medium_items + (n + THREADS - 1) / THREADS;
    float base = (d * scalars[0] + (1.0f - d)) / n;
    float dangling = 0.0f, change = 0.0f;               // this thread's share, over all its items
    for (int item = blockIdx.x; item < items; item += gridDim.x) {   // block-uniform
        int v = -1;                                     // the vertex this thread completes, if any
        float sum = 0.0f;
        if (item < num_heavy) {
            v = heavy_item(heavy[item], item, in_sources, contrib, groups, part_sums, arrivals,
                           shared_sum, sum);
        } else if (item < num_heavy + medium_items) {
            int i = (item - num_heavy) * WARPS + warp;
            if (i < num_medium) v = medium_item(medium[i], in_offsets, in_sources, contrib, sum);
        } else {                                        // 32 consecutive ids per warp
            long long first = (long long)(item - num_heavy - medium_items) * THREADS;
            v = light_item(first + threadIdx.x, n, in_offsets, in_sources, contrib, sum);
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
    finish(dangling, change, partials, finished, scalars, state, changes, history, tol, max_iter);
}
