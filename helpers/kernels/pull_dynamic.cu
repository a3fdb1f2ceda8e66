// pull_dynamic: lecture 14. Dynamic parallelism. A thread whose vertex has more than `threshold`
// in-links launches a child grid for it (pull_dynamic_child) instead of looping alone; needs
// relocatable device code. The device runtime holds at most cudaLimitDevRuntimePendingLaunchCount
// child launches waiting to run (2,048 unless raised); a launch beyond that fails inside the kernel
// and its vertex's sum is never made, so the parent counts failed launches in *failed: the host can
// tell a wrong result from a right one.
// nvrtc-options: -rdc=true
extern "C" __global__ void pull_dynamic_child(const int* in_sources, int begin, int end,
                                              const float* contrib, float* pulled, int v) {
    long long k = begin + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k < end) atomicAdd(&pulled[v], contrib[in_sources[k]]);
}

extern "C" __global__ void pull_dynamic(const int* in_offsets, const int* in_sources,
                                        const float* contrib, float* pulled, int n, int threshold,
                                        int* failed) {
    long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    int begin = in_offsets[v], end = in_offsets[v + 1];
    if (end - begin > threshold) {
        // the child adds to it: the parent's write happens first
        pulled[v] = 0.0f;
        int blocks = (end - begin + 255) / 256;
        pull_dynamic_child<<<blocks, 256>>>(in_sources, begin, end, contrib, pulled, (int)v);
        if (cudaGetLastError() != cudaSuccess) atomicAdd(failed, 1);
        return;
    }
    float sum = 0.0f;
    for (int k = begin; k < end; ++k) sum += contrib[in_sources[k]];
    pulled[v] = sum;
}
