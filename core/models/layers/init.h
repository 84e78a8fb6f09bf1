// The initialization laws of layer.h's InitLaw, shared by the layers.
#ifndef SPARROW_CORE_MODELS_LAYERS_INIT_H_
#define SPARROW_CORE_MODELS_LAYERS_INIT_H_

#include "core/models/layer.h"
#include "core/util/random.h"

namespace sparrow::core {

// n weights of a layer with fan_in inputs and fan_out outputs per weight.
void InitWeights(InitLaw law, double sigma0, int fan_in, int fan_out, int n,
                 Rng* rng, double* w);
// An n x n random orthogonal matrix times sigma0 into the rows [0, n) of a
// column-major matrix with leading dimension ld: Q of the QR factorization of
// a standard normal matrix, its columns' signs fixed by R's diagonal, which
// makes Q uniformly (Haar) distributed (Mezzadri 2007).
void InitOrthogonal(double sigma0, int n, int ld, Rng* rng, double* w);
// n biases: zero, except U(-1/sqrt(fan_in), 1/sqrt(fan_in)) under kTorch.
void InitBiases(InitLaw law, double sigma0, int fan_in, int n, Rng* rng,
                double* b);

}  // namespace sparrow::core

#endif  // SPARROW_CORE_MODELS_LAYERS_INIT_H_
