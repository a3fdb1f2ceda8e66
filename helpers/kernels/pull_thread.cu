// pull_thread: lecture 10. One thread per vertex adds rank[u] / out_degree[u] over its in-links
// (in-CSR).
extern "C" __global__ void pull_thread(const int* in_offsets, const int* in_sources,
                                       const int* out_degree, const float* rank, float* pulled,
                                       int n) {
    // 64-bit: a grid can pass 2^31 threads
    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    float sum = 0.0f;
    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) {
        int u = in_sources[k];
        sum += rank[u] / out_degree[u];   // u links to v, so out_degree[u] >= 1
    }
    pulled[v] = sum;
}
