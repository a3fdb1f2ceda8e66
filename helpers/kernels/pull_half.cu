// pull_half: lecture 40. Pull_contrib reading 16-bit contributions, adding in float32 and
// multiplying each sum by scale[1] (the inverse of to_f16's scale; 1 for bfloat16) once. pull_f16
// reads IEEE float16, pull_bf16 bfloat16. The format is a template parameter, fixed at compile
// time: a format chosen at run time would put a branch in the innermost loop and keep the compiler
// from unrolling it. Half the bytes per gather.
template <int FORMAT>
__device__ __forceinline__ float widen(unsigned short h) {
    if (FORMAT == 0) {
        float value;
        asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(h));
        return value;
    }
    return __uint_as_float(((unsigned int)h) << 16);
}

template <int FORMAT>
__device__ __forceinline__ void pull(const int* in_offsets, const int* in_sources,
                                     const unsigned short* contrib, const float* scale,
                                     float* pulled, int n) {
    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    float sum = 0.0f;
    #pragma unroll 4
    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k)
        sum += widen<FORMAT>(contrib[in_sources[k]]);
    pulled[v] = sum * scale[1];
}

extern "C" __global__ void pull_f16(const int* in_offsets, const int* in_sources,
                                    const unsigned short* contrib, const float* scale,
                                    float* pulled, int n) {
    pull<0>(in_offsets, in_sources, contrib, scale, pulled, n);
}

extern "C" __global__ void pull_bf16(const int* in_offsets, const int* in_sources,
                                     const unsigned short* contrib, const float* scale,
                                     float* pulled, int n) {
    pull<1>(in_offsets, in_sources, contrib, scale, pulled, n);
}
