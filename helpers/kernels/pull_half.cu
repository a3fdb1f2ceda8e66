// pull_half: pull_contrib reading 16-bit contributions (to_half's formats), adding in float32, dividing the
// sum by the storage scale once. Half the bytes per gathered contribution.
extern "C" __global__ void pull_half(const int* in_offsets, const int* in_sources, const unsigned short* contrib,
                                     float* pulled, int n, float inverse_scale, int format) {
    int v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    float sum = 0.0f;
    for (int k = in_offsets[v]; k < in_offsets[v + 1]; ++k) {
        unsigned short h = contrib[in_sources[k]];
        float value;
        if (format == 0) {
            asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(h));
        } else {
            value = __uint_as_float(((unsigned int)h) << 16);
        }
        sum += value;
    }
    pulled[v] = sum * inverse_scale;
}
