"""Conv -> BN pairs of an imported library model that the user's module keeps are not family-7 sites of the
user's file (`f07-conv-bn`): the labelled dev sets' convention (bench/data/dev2/LABELLING.md: batch 8 call 4,
craft-text-detector's re-parented `vgg16_bn().features`; batch 11 call 1, mit-semseg's stem attributes copied
from another file's ResNet; the not-sites of retinaface-pytorch's torchvision backbone and anomalib's timm
extractor), which the checker follows, while the run-based oracle, which traces the running model, counts
them (docs/notes/mech93.md). Each form of the census (docs/notes/mech93.md) is refused with
the library's source readable on the search path (a reduced torchvision beside the user's package), and
beside it its twin whose conv and BatchNorm the user's file builds, which stays a site.

Forms, each reduced from the packages named on it: the whole model kept as an attribute, its
`children()` truncated into a Sequential, its `.features` kept, `.features` re-parented into slices by
`add_module(str(i), features[i])`, a timm model built by name, and its stem children (`resnet.conv1`, `resnet.bn1`) aliased onto the
user's module and called one after the other in the user's forward.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adopter.analysis.crossfile.reach import CrossFileReach
from adopter.analysis.crossfile.resolver import ModuleResolver
from adopter.engine import Environment, load_rules
from adopter.session import RuleContext, Session

ENV = Environment("cpu", frozenset(), "2.13.0")
RULES = tuple(r for r in load_rules().rules if r.family in (7, 8))

# A reduced torchvision 0.20 (`models/resnet.py`, `models/vgg.py`): the layers where the library writes them.
RESNET = '''
from torch import nn


class ResNet(nn.Module):
    def __init__(self, layers, num_classes=1000, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(64)
        self.relu = nn.ReLU(inplace=True)
        self.fc = nn.Linear(64, num_classes)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        return self.fc(x.mean((2, 3)))


def resnet18(*, weights=None, **kwargs):
    return ResNet([2, 2, 2, 2], **kwargs)
'''

VGG = '''
from torch import nn


class VGG(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.features = features

    def forward(self, x):
        return self.features(x)


def make_layers(cfg, batch_norm=False):
    layers = []
    in_channels = 3
    for v in cfg:
        conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
        if batch_norm:
            layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
        else:
            layers += [conv2d, nn.ReLU(inplace=True)]
        in_channels = v
    return nn.Sequential(*layers)


def vgg16_bn(*, weights=None):
    return VGG(make_layers([64, 64], batch_norm=True))
'''

HEADER = '''
import timm
import torch
from torch import nn
from torchvision.models.resnet import resnet18
from torchvision.models.vgg import vgg16_bn
'''

# Not sites: the pairs are written in the library (or only named by the library's attributes).
LIBRARY_FORMS = {
    # torchrl 0.14.1, envs/transforms/r3m.py:61-76 (`convnet = models.resnet18()` kept as `self.convnet`)
    "whole": '''
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.convnet = resnet18(weights=None)

    def forward(self, x):
        return self.convnet(x)
''',
    # docling-ibm-models 4.0.4, tableformer/models/table04_rs/encoder04_rs.py:29-31;
    # self-attention-cv 1.2.3, vit/R50_ViT.py:38-40 (`nn.Sequential(*list(resnet.children())[:k])`)
    "children": '''
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        resnet = resnet18()
        modules = list(resnet.children())[:-1]
        self.body = nn.Sequential(*modules)

    def forward(self, x):
        return self.body(x)
''',
    # pytorch-toolbelt 0.8.0, modules/encoders/mobilenet.py:34-42 (`.features` of a library model kept, sliced)
    "features": '''
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = vgg16_bn(weights=None).features

    def forward(self, x):
        return self.layers(x)
''',
    # craft-text-detector 0.4.3, craft_text_detector/models/basenet/vgg16_bn.py:35 (dev2, labelled not a site);
    # hezar 1.0.0, models/text_detection/craft/craft_text_detection.py:149-188 (fresh6 G1)
    "slices": '''
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        features = vgg16_bn(weights=None).features
        self.slice1 = nn.Sequential()
        self.slice2 = nn.Sequential()
        for i in range(2):
            self.slice1.add_module(str(i), features[i])
        for i in range(2, 6):
            self.slice2.add_module(str(i), features[i])

    def forward(self, x):
        h = self.slice1(x)
        return self.slice2(h)
''',
    # pytorch-toolbelt 0.8.0, modules/encoders/timm/common.py:21; effdet, change-detection-pytorch
    # (`timm.create_model(name, features_only=True)`: the layers are chosen by the name in timm's registry)
    "timm by name": '''
class Encoder(nn.Module):
    def __init__(self, name="resnet18"):
        super().__init__()
        self.encoder = timm.create_model(name, features_only=True, pretrained=False)

    def forward(self, x):
        return self.encoder(x)[-1]
''',
    # monai 1.4.0, networks/blocks/fcn.py:126-129; lpips 0.1.4, pretrained_networks.py:153-154;
    # pywick 0.6.5, models/segmentation/mnas_linknets/linknet.py:52-62 (stem children aliased, called in forward)
    "stem aliases": '''
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        resnet = resnet18(weights=None)
        self.conv1 = resnet.conv1
        self.bn0 = resnet.bn1
        self.relu = resnet.relu

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn0(x)
        return self.relu(x)
''',
    # torchxrayvision 1.5.7, models.py:430-464 (`self.model.conv1(x)`, `self.model.bn1(x)` in `features`)
    "stem calls": '''
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = resnet18(weights=None)

    def forward(self, x):
        x = self.model.conv1(x)
        x = self.model.bn1(x)
        return self.model.relu(x)
''',
}

# Sites: the same shapes with the conv and the BatchNorm built in the user's file (pywick 0.6.5,
# models/segmentation/upernet.py:189-194, the branch that builds its own stem beside the library's).
OWN_FORMS = {
    "own stem": '''
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        resnet = resnet18(weights=None)
        self.conv1 = nn.Conv2d(1, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.layer = resnet.relu

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        return self.layer(x)
''',
    "own initial": '''
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        resnet = resnet18(weights=None)
        self.initial = nn.Sequential(
            nn.Conv2d(1, 64, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
        )
        self.head = resnet.fc

    def forward(self, x):
        return self.head(self.initial(x).mean((2, 3)))
''',
}


def _session(tmp_path: Path) -> Session:
    models = tmp_path / "torchvision" / "models"
    models.mkdir(parents=True)
    (tmp_path / "torchvision" / "__init__.py").write_text("", encoding="utf-8")
    (models / "__init__.py").write_text("", encoding="utf-8")
    (models / "resnet.py").write_text(RESNET, encoding="utf-8")
    (models / "vgg.py").write_text(VGG, encoding="utf-8")
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "__init__.py").write_text("", encoding="utf-8")
    reach = CrossFileReach(ModuleResolver(search_paths=[str(tmp_path)]), root=str(tmp_path / "user"))
    return Session(RuleContext(RULES, (), ENV), reach=reach)


def _family7(tmp_path: Path, code: str) -> list[int]:
    text = HEADER + code
    session = _session(tmp_path)
    path = tmp_path / "user" / "model.py"
    path.write_text(text, encoding="utf-8")
    analysed = session.analysed(text, str(path))
    return [f.span.start_line + 1 for f in analysed.findings if f.rule_id == "f07-conv-bn"]


def _library_pairs_read(tmp_path: Path) -> list[int]:
    """The reduced library's own pairs, read as a file of its own: the fixture holds what it claims."""
    session = _session(tmp_path)
    path = tmp_path / "torchvision" / "models" / "resnet.py"
    return [f.span.start_line + 1 for f in session.analysed(RESNET, str(path)).findings if f.rule_id == "f07-conv-bn"]


def test_the_reduced_library_holds_a_conv_bn_site_of_its_own(tmp_path: Path) -> None:
    assert _library_pairs_read(tmp_path) == [RESNET.splitlines().index("        x = self.conv1(x)") + 1]


@pytest.mark.parametrize("form", sorted(LIBRARY_FORMS))
def test_a_library_models_conv_bn_pairs_are_not_sites_of_the_users_file(tmp_path: Path, form: str) -> None:
    assert _family7(tmp_path, LIBRARY_FORMS[form]) == []


@pytest.mark.parametrize("form", sorted(OWN_FORMS))
def test_the_users_own_conv_and_batchnorm_beside_a_library_model_stay_sites(tmp_path: Path, form: str) -> None:
    text = HEADER + OWN_FORMS[form]
    marker = {"own stem": "x = self.conv1(x)", "own initial": "self.initial(x)"}[form]
    site = next(i + 1 for i, line in enumerate(text.splitlines()) if marker in line)  # the forward line
    assert _family7(tmp_path, OWN_FORMS[form]) == [site]


def test_the_reduced_library_is_readable_from_the_users_file(tmp_path: Path) -> None:
    _session(tmp_path)
    resolver = ModuleResolver(search_paths=[str(tmp_path)])
    user = str(tmp_path / "user" / "model.py")
    assert resolver.locate("torchvision.models.resnet", user) == str(tmp_path / "torchvision" / "models" / "resnet.py")
    assert resolver.is_module_class("torchvision.models.resnet.ResNet", user) is True
