// warp_atomic_sum: lecture 21. The reduction fused avoids. Every warp reduces its 32 values with
// shuffles, then adds the result to ONE global total with atomicAdd: all those atomics hit the same
// address, one after another.
extern "C" __global__ void warp_atomic_sum(const float* values, float* total, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float value = i < n ? values[i] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2)
        value += __shfl_down_sync(0xffffffffu, value, offset);
    if (threadIdx.x % 32 == 0) atomicAdd(total, value);
}
