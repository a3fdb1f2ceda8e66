// fma_roof: lecture 31. The compute roof of the roofline, measured: every thread runs `rounds`
// rounds of 8 independent float32 fused multiply-adds (2 FLOPs each) on values held in registers,
// and writes one float so that nothing is optimised away. FLOP/s = 16 * rounds * threads / time.
// Launch enough blocks to fill the GPU.
extern "C" __global__ void fma_roof(float* out, int rounds, float a, float b) {
    float x0 = threadIdx.x, x1 = x0 + 1.0f, x2 = x0 + 2.0f, x3 = x0 + 3.0f;
    float x4 = x0 + 4.0f, x5 = x0 + 5.0f, x6 = x0 + 6.0f, x7 = x0 + 7.0f;
    for (int r = 0; r < rounds; ++r) {
        x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
        x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
    }
    out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
