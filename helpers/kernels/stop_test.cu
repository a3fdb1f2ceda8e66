// stop_test: lecture 20. The stop test on the GPU for the unfused iteration (the fused kernel's
// last block runs the same test). One thread records the L1 change, counts the iteration and sets
// state[0] to 1 once the change is below tol, or to 2 once max_iter iterations have run (max_iter
// <= 0: no limit). From then on the update leaves the ranks as they are, so the host may look at
// state only every few iterations and still get the ranks of the iteration that met the test.
extern "C" __global__ void stop_test(const float* change, int* state, float* changes, int history,
                                     float tol, int max_iter) {
    if (state[0]) return;
    int count = state[1];
    changes[count % history] = change[0];
    state[1] = count + 1;
    if (change[0] < tol) state[0] = 1;
    else if (max_iter > 0 && count + 1 >= max_iter) state[0] = 2;
}
