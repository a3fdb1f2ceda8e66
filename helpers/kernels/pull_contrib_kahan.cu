// pull_contrib_kahan: lecture 20. Pull_contrib with Kahan-compensated float32 addition: a second
// float carries the low-order bits each addition drops, so a long in-link list loses almost nothing
// to rounding.
extern "C" __global__ void pull_contrib_kahan(const int* in_offsets, const int* in_sources,
                                              const float* contrib, float* pulled, int n) {
    // 64-bit: a grid can pass 2^31 threads
    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    float sum = 0.0f, lost = 0.0f;
    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) {
        float term = contrib[in_sources[k]] - lost;
        float next = sum + term;
        // what the addition rounded away (compiled without fast-math)
        lost = (next - sum) - term;
        sum = next;
    }
    pulled[v] = sum;
}
