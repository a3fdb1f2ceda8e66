// fused_step: a whole PageRank iteration in one launch, balanced by in-degree, so that no hub and no run of
// adjacent hubs keeps one warp busy while the rest of the GPU waits. Vertices come in three lists built
// once per graph: light ones (one thread each), medium ones (one warp each) and heavy tasks (one block
// each, at most a fixed number of in-links per task: a vertex with more is split into several tasks, and
// the block that arrives last adds the tasks' partial sums in task order, so the result is deterministic).
// The grid runs the heavy tasks first, then the medium and the light vertices. Whoever completes a vertex
// writes its new rank and next contribution; every block writes its share of the new dangling mass and of
// the L1 change to `partials`, which fused_finalize adds. Once state[0] says the run has stopped, every
// block returns at once: replaying extra iterations of a captured CUDA graph changes nothing.
// Launch with 256 threads per block and heavy + ceil(medium / 8) + ceil(light / 256) blocks.
#define THREADS 256
#define WARPS (THREADS / 32)

__device__ __forceinline__ float warp_sum(float x) {
    for (int offset = 16; offset > 0; offset /= 2) x += __shfl_down_sync(0xffffffffu, x, offset);
    return x;
}

extern "C" __global__ void fused_step(const int* in_offsets, const int* in_sources, const int* out_degree,
                                      const float* contrib, const float* rank, const float* scalars,
                                      const int* state, float* new_rank, float* new_contrib, float* partials,
                                      const int* light, int num_light, const int* medium, int num_medium,
                                      const int4* heavy, int num_heavy, const int2* groups, float* part_sums,
                                      int* arrivals, int n, float d) {
    __shared__ float shared_sum[WARPS], shared_dangling[WARPS], shared_change[WARPS];
    if (state[0]) return;                                   // stopped: the same answer for every block
    int block = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int medium_blocks = (num_medium + WARPS - 1) / WARPS;
    int v = -1;                                             // the vertex this thread completes, if any
    float sum = 0.0f;
    if (block < num_heavy) {                                // block-uniform: one heavy task
        int4 task = heavy[block];                           // vertex, first in-link, end, split group or -1
        float part = 0.0f;
        #pragma unroll 4
        for (long long k = task.y + threadIdx.x; k < task.z; k += THREADS) part += contrib[in_sources[k]];
        part = warp_sum(part);
        if (lane == 0) shared_sum[warp] = part;
        __syncthreads();
        if (warp == 0) {
            part = warp_sum(lane < WARPS ? shared_sum[lane] : 0.0f);
            if (lane == 0 && task.w < 0) {
                v = task.x;
                sum = part;
            } else if (lane == 0) {                         // one part of a split vertex
                int2 group = groups[task.w];                // its first task, its number of tasks
                part_sums[block] = part;
                __threadfence();                            // the part is visible before this block arrives
                if (atomicAdd(&arrivals[task.w], 1) == group.y - 1) {      // the last part to arrive
                    __threadfence();
                    for (int p = 0; p < group.y; ++p) sum += ((volatile float*)part_sums)[group.x + p];
                    arrivals[task.w] = 0;                   // ready for the next iteration
                    v = task.x;
                }
            }
        }
    } else if (block < num_heavy + medium_blocks) {         // one warp per medium vertex
        int i = (block - num_heavy) * WARPS + warp;
        if (i < num_medium) {                               // warp-uniform
            int u = medium[i];
            float part = 0.0f;
            #pragma unroll 4
            for (long long k = in_offsets[u] + lane; k < in_offsets[u + 1]; k += 32) part += contrib[in_sources[k]];
            part = warp_sum(part);
            if (lane == 0) { v = u; sum = part; }
        }
    } else {                                                // one thread per light vertex
        long long i = (long long)(block - num_heavy - medium_blocks) * THREADS + threadIdx.x;
        if (i < num_light) {
            v = light[i];
            #pragma unroll 4
            for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) sum += contrib[in_sources[k]];
        }
    }
    float dangling = 0.0f, change = 0.0f;
    if (v >= 0) {
        float r = d * sum + (d * scalars[0] + (1.0f - d)) / n;
        int degree = out_degree[v];
        new_rank[v] = r;
        new_contrib[v] = degree > 0 ? r / degree : 0.0f;
        dangling = degree == 0 ? r : 0.0f;
        change = fabsf(r - rank[v]);
    }
    dangling = warp_sum(dangling);                          // every thread of the block reaches this
    change = warp_sum(change);
    if (lane == 0) { shared_dangling[warp] = dangling; shared_change[warp] = change; }
    __syncthreads();
    if (warp == 0) {
        dangling = warp_sum(lane < WARPS ? shared_dangling[lane] : 0.0f);
        change = warp_sum(lane < WARPS ? shared_change[lane] : 0.0f);
        if (lane == 0) { partials[2 * block] = dangling; partials[2 * block + 1] = change; }
    }
}
