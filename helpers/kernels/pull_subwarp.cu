// pull_subwarp: lecture 13. `width` lanes (2, 4, 8, 16 or 32) per vertex, so one warp serves 32 /
// width vertices. No lane leaves early: every lane of the warp takes part in every shuffle.
extern "C" __global__ void pull_subwarp(const int* in_offsets, const int* in_sources,
                                        const float* contrib, float* pulled, int n, int width) {
    long long v = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / width;
    int lane = threadIdx.x % width;
    float sum = 0.0f;
    if (v < n) {
        for (long long k = in_offsets[v] + lane; k < in_offsets[v + 1]; k += width) {
            sum += contrib[in_sources[k]];
        }
    }
    for (int offset = width / 2; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset, width);
    }
    if (v < n && lane == 0) pulled[v] = sum;
}
