// top_k_merge_branchy: lecture 33. Top_k_merge with one difference, to measure the Thrust report's
// claim that its top-5 merge is branch-free "through the ternary operator": here the two-list merge
// picks the list with an if/else (each branch copies one entry and advances one index) instead of
// two ternary selects and two flag increments. Same lists, same launches, same results; the
// compiler may still turn either form into predicated instructions or into branches, so only a
// measurement says which is faster.
#define K_MAX 16
#define THREADS 128

__device__ __forceinline__ bool ahead(float ra, int ia, float rb, int ib) {
    return ra > rb || (ra == rb && ia < ib);
}

extern "C" __global__ void top_k_merge_branchy(const float* ranks, const int* ids, int n, int k,
                                       float* out_ranks, int* out_ids) {
    __shared__ float shared_r[THREADS * K_MAX];
    __shared__ int shared_i[THREADS * K_MAX];
    float r[K_MAX];
    int id[K_MAX];
    for (int j = 0; j < K_MAX; ++j) { r[j] = -1.0f; id[j] = 0x7fffffff; }   // ranks are >= 0
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float x = ranks[i];
        int xi = ids ? ids[i] : i;
        if (!ahead(x, xi, r[k - 1], id[k - 1])) continue;
        int j = k - 1;                                   // insertion into the sorted list
        while (j > 0 && ahead(x, xi, r[j - 1], id[j - 1])) {
            r[j] = r[j - 1];
            id[j] = id[j - 1];
            --j;
        }
        r[j] = x; id[j] = xi;
    }
    float* my_r = shared_r + threadIdx.x * K_MAX;
    int* my_i = shared_i + threadIdx.x * K_MAX;
    for (int j = 0; j < k; ++j) { my_r[j] = r[j]; my_i[j] = id[j]; }
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            const float* b_r = my_r + stride * K_MAX;
            const int* b_i = my_i + stride * K_MAX;
            int a = 0, b = 0;
            for (int j = 0; j < k; ++j) {                // with branches: if/else picks the list
                if (ahead(b_r[b], b_i[b], my_r[a], my_i[a])) {
                    r[j] = b_r[b];
                    id[j] = b_i[b];
                    ++b;
                } else {
                    r[j] = my_r[a];
                    id[j] = my_i[a];
                    ++a;
                }
            }
        }
        __syncthreads();
        if (threadIdx.x < stride) {
            for (int j = 0; j < k; ++j) { my_r[j] = r[j]; my_i[j] = id[j]; }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        for (int j = 0; j < k; ++j) {
            out_ranks[blockIdx.x * k + j] = shared_r[j];
            out_ids[blockIdx.x * k + j] = shared_i[j];
        }
    }
}
