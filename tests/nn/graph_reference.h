// A float64 interpreter of a Graph for gradient checks: it reads the graph's structure and its
// current parameters (copied to double), evaluates Linear / Activation (the table's float64
// reference) / Add / Flatten nodes in double, and gives central finite differences of the loss
// L = sum(r * output) with respect to every parameter. Used by tests/nn and tests/models.
#pragma once
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "nnperf/nn/activation.h"
#include "nnperf/nn/add.h"
#include "nnperf/nn/flatten.h"
#include "nnperf/nn/graph.h"
#include "nnperf/nn/linear.h"

namespace nnperf::test {

class GraphReference {
 public:
  explicit GraphReference(Graph& g) : g_(g) {
    for (const Param& p : g.params()) {
      params.emplace_back(p.value->data(), p.value->data() + p.value->numel());
    }
    // Map each node to the index of its first parameter in params().
    int index = 0;
    first_param_.assign(static_cast<size_t>(g.size()), -1);
    for (int i = 1; i < g.size(); ++i) {
      const size_t n = g.layer(i).params().size();
      if (n > 0) first_param_[i] = index;
      index += static_cast<int>(n);
    }
  }

  // Output of the graph for input x (flattened), in double.
  std::vector<double> forward(const std::vector<double>& x) const {
    std::vector<std::vector<double>> v(static_cast<size_t>(g_.size()));
    v[0] = x;
    for (int i = 1; i < g_.size(); ++i) {
      const Layer& layer = g_.layer(i);
      const std::vector<int>& in = g_.inputs(i);
      const Shape& out_shape = g_.output_shape(i);
      std::vector<double> y(static_cast<size_t>(out_shape.numel()), 0.0);
      if (auto* lin = dynamic_cast<const Linear*>(&layer)) {
        const std::vector<double>& w = params[first_param_[i]];
        const int64_t mb = out_shape[0], n_in = lin->in_features(), n_out = lin->out_features();
        for (int64_t r = 0; r < mb; ++r) {
          for (int64_t c = 0; c < n_out; ++c) {
            double acc = lin->has_bias() ? params[first_param_[i] + 1][c] : 0.0;
            for (int64_t k = 0; k < n_in; ++k) acc += v[in[0]][r * n_in + k] * w[k * n_out + c];
            y[r * n_out + c] = acc;
          }
        }
      } else if (auto* act = dynamic_cast<const Activation*>(&layer)) {
        for (size_t e = 0; e < y.size(); ++e) y[e] = act->kernel().reference(v[in[0]][e]);
      } else if (dynamic_cast<const Add*>(&layer) != nullptr) {
        for (int src : in) {
          for (size_t e = 0; e < y.size(); ++e) y[e] += v[src][e];
        }
      } else if (dynamic_cast<const Flatten*>(&layer) != nullptr) {
        y = v[in[0]];
      } else {
        throw std::runtime_error("GraphReference: no float64 rule for " + layer.kind());
      }
      v[i] = std::move(y);
    }
    return v.back();
  }

  double loss(const std::vector<double>& x, const std::vector<double>& r) const {
    const std::vector<double> y = forward(x);
    double l = 0;
    for (size_t e = 0; e < y.size(); ++e) l += r[e] * y[e];
    return l;
  }

  // dL/d params[p][e] by central differences (h relative to the entry's size).
  double fd_gradient(size_t p, size_t e, const std::vector<double>& x,
                     const std::vector<double>& r) {
    const double saved = params[p][e];
    const double h = 1e-6 * std::max(1.0, std::fabs(saved));
    params[p][e] = saved + h;
    const double up = loss(x, r);
    params[p][e] = saved - h;
    const double down = loss(x, r);
    params[p][e] = saved;
    return (up - down) / (2 * h);
  }

  std::vector<std::vector<double>> params;  // in Graph::params() order

 private:
  Graph& g_;
  std::vector<int> first_param_;
};

}  // namespace nnperf::test
