// pull_bin_warp: one warp per vertex, for the vertices listed in the middle degree bin.
extern "C" __global__ void pull_bin_warp(const int* vertices, int count, const int* in_offsets,
                                         const int* in_sources, const float* contrib, float* pulled) {
    long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (i >= count) return;                   // warp-uniform
    int v = vertices[i];
    float sum = 0.0f;
    for (long long k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += 32) sum += contrib[in_sources[k]];
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (lane == 0) pulled[v] = sum;
}
