// to_half: float32 -> 16-bit storage. format 0: IEEE float16 of value * scale (cvt.rn, sm_53 and later);
// format 1: bfloat16 (the top 16 bits of the float32, rounded to nearest even), scale ignored.
extern "C" __global__ void to_half(const float* values, unsigned short* out, int n, float scale, int format) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (format == 0) {
        unsigned short h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(values[i] * scale));
        out[i] = h;
    } else {
        unsigned int bits = __float_as_uint(values[i]);
        bits += 0x7fffu + ((bits >> 16) & 1u);
        out[i] = (unsigned short)(bits >> 16);
    }
}
