#pragma once
// The published Cora hyperparameters, shared by the accuracy tests of the
// reference trainer and of the engine so that both train the same models.
#include "models/model.hpp"

namespace ht::test {

struct CoraHparams {
  ModelConfig model;
  OptimizerConfig opt;
};

// GCN as in Kipf & Welling: 16 hidden units, dropout 0.5, Adam lr 0.01,
// weight decay 5e-4 on the first layer only.
inline CoraHparams cora_gcn_hparams() {
  CoraHparams h;
  h.model.kind = ModelKind::gcn;
  h.model.dims = {1433, 16, 7};
  h.model.dropout = 0.5f;
  h.opt.lr = 0.01f;
  h.opt.weight_decay = 5e-4f;
  h.opt.decay_first_layer_only = true;
  return h;
}

// GAT as in Veličković et al.: 8 heads of 8 hidden units, one output head,
// dropout 0.6 on features and attention, Adam lr 0.005, weight decay 5e-4.
inline CoraHparams cora_gat_hparams() {
  CoraHparams h;
  h.model.kind = ModelKind::gat;
  h.model.dims = {1433, 8, 7};
  h.model.heads = 8;
  h.model.out_heads = 1;
  h.model.dropout = 0.6f;
  h.model.attn_dropout = 0.6f;
  h.opt.lr = 0.005f;
  h.opt.weight_decay = 5e-4f;
  return h;
}

// GraphSAGE (mean aggregator, root weight) with PyG's usual Cora settings: 16
// hidden units, dropout 0.5, Adam lr 0.01, weight decay 5e-4 on every layer.
inline CoraHparams cora_sage_hparams() {
  CoraHparams h;
  h.model.kind = ModelKind::sage;
  h.model.dims = {1433, 16, 7};
  h.model.dropout = 0.5f;
  h.opt.lr = 0.01f;
  h.opt.weight_decay = 5e-4f;
  return h;
}

}  // namespace ht::test
