// pull_bin_thread: one thread per vertex, for the vertices listed in one degree bin (the light ones).
extern "C" __global__ void pull_bin_thread(const int* vertices, int count, const int* in_offsets,
                                           const int* in_sources, const float* contrib, float* pulled) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;   // 64-bit: a grid can pass 2^31 threads
    if (i >= count) return;
    int v = vertices[i];
    float sum = 0.0f;
    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) sum += contrib[in_sources[k]];
    pulled[v] = sum;
}
