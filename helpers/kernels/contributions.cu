// contributions: lecture 12. what each vertex sends along every out-link this iteration, rank /
// out-degree (0 if dangling).
extern "C" __global__ void contributions(const float* rank, const int* out_degree, float* contrib, int n) {
    long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x;   // 64-bit: a grid can pass 2^31 threads
    if (u >= n) return;
    int degree = out_degree[u];
    contrib[u] = degree > 0 ? rank[u] / degree : 0.0f;
}
