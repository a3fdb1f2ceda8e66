// gather_floor: lecture 10. The practical floor of a pull iteration on this GPU for this graph and
// its vertex order. stream_floor reads every in-link's source once, in order: the one stream no
// pull kernel avoids. gather_floor also fetches the contribution each source points at (the random
// reads every pull kernel makes, one 32-byte sector each unless neighbours share it) and adds them
// up. Nothing else: no offsets, no per-vertex work; each thread writes one float so that nothing is
// optimised away. A kernel that does a whole iteration that reads the in-links in their stored
// order can approach gather_floor's time, not beat it; one that reorders its reads (pull_segment,
// by source) can. Grid-stride loops; 64-bit indices.
extern "C" __global__ void stream_floor(const int* sources, float* out, long long count) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    int sum = 0;
    #pragma unroll 4
    for (long long k = i; k < count; k += stride) sum += sources[k];
    out[i] = (float)sum;
}

extern "C" __global__ void gather_floor(const int* sources, const float* x, float* out,
                                        long long count) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)gridDim.x * blockDim.x;
    float sum = 0.0f;
    #pragma unroll 4
    for (long long k = i; k < count; k += stride) sum += x[sources[k]];
    out[i] = sum;
}
