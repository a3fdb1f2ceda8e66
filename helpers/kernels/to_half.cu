// to_half: lecture 40. Float32 contributions -> 16-bit storage. half_scale (one thread) picks, on
// the GPU and from the data, the power of two that brings the largest contribution into [2^14,
// 2^15): every scaled value then fits float16 (largest 65,504) whatever the graph, and small ones
// keep float16's 11 significant bits down to 2^-28 of the largest. scale[0] is the factor, scale[1]
// its inverse (pull_f16 applies it once per sum). to_f16 rounds value * scale[0] to IEEE float16
// (cvt.rn, sm_53 and later); to_bf16 keeps the top 16 bits of the float32 rounded to nearest even
// (bfloat16 has float32's range: no scale).
extern "C" __global__ void half_scale(const float* largest, float* scale) {
    float m = largest[0];
    int e = m > 0.0f ? 14 - ilogbf(m) : 0;
    scale[0] = ldexpf(1.0f, e);
    scale[1] = ldexpf(1.0f, -e);
}

extern "C" __global__ void to_f16(const float* values, unsigned short* out, int n,
                                  const float* scale) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(values[i] * scale[0]));
    out[i] = h;
}

extern "C" __global__ void to_bf16(const float* values, unsigned short* out, int n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned int bits = __float_as_uint(values[i]);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    out[i] = (unsigned short)(bits >> 16);
}
