// pull_contrib_f64: lecture 20. Pull_contrib accumulating in double; the ranks stay float32 in
// memory, so the bytes moved are the same, only the additions are wider.
extern "C" __global__ void pull_contrib_f64(const int* in_offsets, const int* in_sources,
                                            const float* contrib, float* pulled, int n) {
    // 64-bit: a grid can pass 2^31 threads
    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    double sum = 0.0;
    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) sum += contrib[in_sources[k]];
    pulled[v] = (float)sum;
}
