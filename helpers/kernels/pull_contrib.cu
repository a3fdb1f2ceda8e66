// pull_contrib: lecture 12. One thread per vertex adds the precomputed contributions of its
// in-neighbours.
extern "C" __global__ void pull_contrib(const int* in_offsets, const int* in_sources,
                                        const float* contrib, float* pulled, int n) {
    // 64-bit: a grid can pass 2^31 threads
    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    float sum = 0.0f;
    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) {
        sum += contrib[in_sources[k]];
    }
    pulled[v] = sum;
}
