// add_one: lecture 00. The smallest useful kernel; one thread per element, guarded for sizes that
// are not a multiple of the block.
extern "C" __global__ void add_one(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
