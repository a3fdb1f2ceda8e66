// pull_shared_tile: lecture 13. Each block first copies the contributions of its own vertices into
// shared memory; in-links from inside that tile read shared memory, the rest read global memory.
// Launch with blockDim.x * 4 bytes of dynamic shared memory.
extern "C" __global__ void pull_shared_tile(const int* in_offsets, const int* in_sources,
                                            const float* contrib, float* pulled, int n) {
    extern __shared__ float tile[];
    long long first = (long long)blockIdx.x * blockDim.x;
    long long v = first + threadIdx.x;
    tile[threadIdx.x] = v < n ? contrib[v] : 0.0f;
    // every thread of the block reaches it: no early return above
    __syncthreads();
    if (v >= n) return;
    float sum = 0.0f;
    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) {
        int u = in_sources[k];
        long long local = u - first;
        sum += (local >= 0 && local < blockDim.x) ? tile[local] : contrib[u];
    }
    pulled[v] = sum;
}
