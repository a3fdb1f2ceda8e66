// scan_naive: lecture 11. One thread per vertex searches every vertex's out-links for itself. O(N *
// E): tiny graphs only.
extern "C" __global__ void scan_naive(const int* out_offsets, const int* out_targets,
                                      const int* out_degree, const float* rank, float* pulled,
                                      int n) {
    // 64-bit: a grid can pass 2^31 threads
    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    float sum = 0.0f;
    for (int u = 0; u < n; ++u) {
        for (int k = out_offsets[u]; k < out_offsets[u + 1]; ++k) {
            if (out_targets[k] == v) {      // duplicates are merged: u links to v at most once
                sum += rank[u] / out_degree[u];
                break;
            }
        }
    }
    pulled[v] = sum;
}
