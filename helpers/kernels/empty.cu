// empty: lecture 10. does nothing; timing many launches of it measures what a launch itself costs.
extern "C" __global__ void empty() {}
