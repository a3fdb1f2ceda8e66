// pull_interleaved: lecture 12. In-links stored as (source, out_degree[source]) pairs, so one
// 8-byte load per edge brings both; still one thread per vertex, dividing per edge.
extern "C" __global__ void pull_interleaved(const int* in_offsets, const int2* in_edges,
                                            const float* rank, float* pulled, int n) {
    // 64-bit: a grid can pass 2^31 threads
    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    float sum = 0.0f;
    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) {
        int2 edge = in_edges[k];          // .x: source, .y: its out-degree
        sum += rank[edge.x] / edge.y;
    }
    pulled[v] = sum;
}
