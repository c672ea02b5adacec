#include "train/mesh.h"

namespace braid::train {

Mesh::~Mesh() {
  for (braidComm_t c : owned_) braidCommDestroy(c);
}

void Mesh::build(braidComm_t world, const Layout& layout, CommStats* stats, Mesh* out) {
  out->layout = layout;
  out->world = Group("world", world, stats);
  const int r = out->world.rank();
  out->worldRank = r;
  Coords& c = out->at;
  c.tp = r % layout.tp;
  c.ep = (r / layout.tp) % layout.ep;
  c.dp = (r / (layout.tp * layout.ep)) % layout.dp;
  c.pp = r / (layout.tp * layout.ep * layout.dp);

  // color: the coordinates that stay fixed along the axis; key: the coordinate that varies.
  auto split = [&](const char* name, int size, int color, int key, Group* g) {
    braidComm_t sub = nullptr;
    braidResult_t res = braidCommSplit(world, color, key, &sub, nullptr);
    if (res != braidSuccess) {
      fatal(std::string("braidCommSplit for the ") + name + " group failed: " +
            braidGetLastError(world));
    }
    out->owned_.push_back(sub);
    *g = Group(name, sub, stats);
    if (g->size() != size) fatal(std::string("the ") + name + " group has the wrong size");
  };
  const Layout& l = layout;
  split("tp", l.tp, ((c.pp * l.dp + c.dp) * l.ep + c.ep), c.tp, &out->tp);
  split("pp", l.pp, ((c.dp * l.ep + c.ep) * l.tp + c.tp), c.pp, &out->pp);
  split("dp", l.dp, ((c.pp * l.ep + c.ep) * l.tp + c.tp), c.dp, &out->dp);
  split("ep", l.ep, ((c.pp * l.dp + c.dp) * l.tp + c.tp), c.ep, &out->ep);
  split("data", l.dp * l.ep, c.pp * l.tp + c.tp, c.dp * l.ep + c.ep, &out->data);
}

}  // namespace braid::train
