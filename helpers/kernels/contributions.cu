// contributions: lecture 12. What each vertex sends along every out-link this iteration, rank /
// out-degree (0 if dangling).
extern "C" __global__ void contributions(const float* rank, const int* out_degree, float* contrib,
                                         int n) {
    // 64-bit: a grid can pass 2^31 threads
    long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= n) return;
    int degree = out_degree[u];
    contrib[u] = degree > 0 ? rank[u] / degree : 0.0f;
}
