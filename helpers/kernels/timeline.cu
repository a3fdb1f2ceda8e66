// timeline: lecture 10. Instruments a student can run where no profiler is: the pull loops of
// pull_contrib (a thread per vertex) and pull_warp (a warp per vertex), each block recording when
// it started and finished (%globaltimer, nanoseconds, one clock for the whole GPU) and on which
// multiprocessor it ran (%smid). Drawn as a timeline, one line per block, they show which blocks
// the whole kernel waits for.
__device__ __forceinline__ unsigned long long now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ void record(unsigned long long t0, unsigned long long* start,
                                       unsigned long long* stop, int* sm) {
    __syncthreads();                                   // every thread of the block reaches this
    if (threadIdx.x == 0) {
        int id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        start[blockIdx.x] = t0;
        stop[blockIdx.x] = now();
        sm[blockIdx.x] = id;
    }
}

extern "C" __global__ void timeline_thread(const int* in_offsets, const int* in_sources,
                                           const float* contrib, float* pulled, int n,
                                           unsigned long long* start, unsigned long long* stop,
                                           int* sm) {
    unsigned long long t0 = now();
    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v < n) {
        float sum = 0.0f;
        for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) sum += contrib[in_sources[k]];
        pulled[v] = sum;
    }
    record(t0, start, stop, sm);
}

extern "C" __global__ void timeline_warp(const int* in_offsets, const int* in_sources,
                                         const float* contrib, float* pulled, int n,
                                         unsigned long long* start, unsigned long long* stop,
                                         int* sm) {
    unsigned long long t0 = now();
    long long v = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    float sum = 0.0f;
    if (v < n) {                                       // warp-uniform
        for (long long k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += 32) {
            sum += contrib[in_sources[k]];
        }
    }
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (v < n && lane == 0) pulled[v] = sum;
    record(t0, start, stop, sm);
}
