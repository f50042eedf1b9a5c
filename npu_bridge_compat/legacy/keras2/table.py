"""Where each module path of the standalone Keras 2.2 / 2.3 that ran beside TensorFlow 1.15 (Ascend's Keras scripts
installed it) lives today, where its layout differs from the line's Keras 2: the one table behind the Keras 2.2
world's modules, its warnings and its stand-ins.

Keys are full module paths as those programs import them (`keras.engine.topology`, `keras.utils.np_utils`). Their
names resolve to the TF 1.15 API of this line's Keras 2 (`tensorflow.compat.v1.keras`: Keras 2.15, or tf_keras from
TensorFlow 2.16), which builds graph-mode models as Keras 2.2 on TensorFlow 1.15 did, then to that Keras' modules
(`{keras}.src...`). A module serves, in this order: its `names`, its `missing` names (stand-ins that raise when
used), the names of its `sources` (first match wins), and the child modules listed here or of its sources. Paths
the line's Keras 2 has as they were are not listed: the program imports them as they are.
"""

from __future__ import annotations

from npu_bridge_compat.imports.world import KERAS, Module

V1 = "tensorflow.compat.v1.keras"  # the TF 1.15 API of this line's Keras 2
MERGE = (
    "Keras 1's Merge layer and merge function were removed in Keras 2; the merge layers replace them, one per mode: "
    "keras.layers.Add, Multiply, Average, Maximum, Concatenate and Dot (or add, multiply, average, maximum, "
    "concatenate and dot)"
)
DIM_ORDERING = "removed in Keras 2.2.5; keras.backend.image_data_format / set_image_data_format replace it"
NETWORK = "Keras' Functional model, which Network became in Keras 2.4: it is a Model too"

_TOPOLOGY = {  # keras.engine's names in Keras 2.2 (topology.py, then base_layer.py, input_layer.py, network.py)
    "Layer": f"{V1}.layers.Layer",
    "InputSpec": f"{V1}.layers.InputSpec",
    "Input": f"{V1}.Input",
    "InputLayer": f"{V1}.layers.InputLayer",
    "get_source_inputs": f"{V1}.utils.get_source_inputs",
    "Network": f"{KERAS}.src.engine.functional.Functional",
    "Node": f"{KERAS}.src.engine.node.Node",
}
_OPTIMIZERS_V2 = ("adadelta", "adagrad", "adam", "adamax", "gradient_descent", "nadam", "rmsprop")

MODULES: dict[str, Module] = {
    # the package's own module object (never the API module itself), which says the version of the Keras 2 behind it
    "keras": Module(sources=(V1,), names={"__version__": f"{KERAS}.__version__"}),
    "keras.engine": Module(
        sources=(f"{KERAS}.src.engine",),
        names={**_TOPOLOGY, "Model": f"{V1}.Model"},
        differs={"Network": NETWORK},
        missing={"merge": MERGE, "Merge": MERGE},
    ),
    "keras.engine.topology": Module(
        names=_TOPOLOGY, differs={"Network": NETWORK}, missing={"merge": MERGE, "Merge": MERGE}
    ),
    "keras.layers": Module(
        sources=(f"{V1}.layers",),
        names={
            "Deconvolution2D": f"{V1}.layers.Conv2DTranspose",
            "Deconvolution3D": f"{V1}.layers.Conv3DTranspose",
        },
        missing={"merge": MERGE, "Merge": MERGE},
    ),
    "keras.layers.normalization": Module(names={"BatchNormalization": f"{V1}.layers.BatchNormalization"}),
    "keras.backend": Module(
        sources=(f"{V1}.backend", f"{KERAS}.src.backend"),
        missing={"image_dim_ordering": DIM_ORDERING, "set_image_dim_ordering": DIM_ORDERING},
    ),
    "keras.backend.tensorflow_backend": Module(sources=(f"{V1}.backend",)),
    "keras.utils": Module(sources=(f"{V1}.utils", f"{KERAS}.src.utils")),
    "keras.utils.np_utils": Module(sources=(f"{KERAS}.src.utils.np_utils",)),
    # Keras 2.13 moved the serialization functions and the custom object registry out of generic_utils
    "keras.utils.generic_utils": Module(
        sources=(
            f"{KERAS}.src.utils.generic_utils",
            f"{KERAS}.src.saving.legacy.serialization",
            f"{KERAS}.src.saving.object_registration",
        )
    ),
    "keras.utils.layer_utils": Module(
        sources=(f"{KERAS}.src.utils.layer_utils",), names={"layer_from_config": f"{V1}.layers.deserialize"}
    ),
    "keras.utils.vis_utils": Module(sources=(f"{KERAS}.src.utils.vis_utils",)),
    "keras.utils.data_utils": Module(sources=(f"{KERAS}.src.utils.data_utils",)),
    # Keras 2.3 to 2.6 named the OptimizerV2 modules `<name>_v2` in keras.optimizers
    "keras.optimizers": Module(
        sources=(f"{V1}.optimizers",),
        names={f"{name}_v2": f"{KERAS}.src.optimizers.legacy.{name}" for name in _OPTIMIZERS_V2},
    ),
}
