# Deploy artefact checks (docs/deploy.md). Included by the Makefile.
#
# Tool binaries are built once into $(TOOLS_DIR)/<tool>-<version>/ (go install, minutes the
# first time) and reused; `make tools` builds whatever is missing, `make deploy-check` and
# `make rules-check` call it, so `make test` builds them only on a new machine.

TOOLS_DIR          ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/smg-tools
HELM_VERSION       ?= v3.22.0
KUBECONFORM_VERSION?= v0.8.0
PROMTOOL_VERSION   ?= v0.316.0
K8S_VERSION        ?= 1.37.2

HELM        := $(TOOLS_DIR)/helm-$(HELM_VERSION)/helm
KUBECONFORM := $(TOOLS_DIR)/kubeconform-$(KUBECONFORM_VERSION)/kubeconform
PROMTOOL    := $(TOOLS_DIR)/promtool-$(PROMTOOL_VERSION)/promtool
K8S_SCHEMAS := $(TOOLS_DIR)/k8s-schemas-v$(K8S_VERSION)

CHART       := deploy/helm/smg
RENDERED    := deploy/k8s/smg.yaml
# Rendered plain manifests install into this namespace (the RoleBinding names it).
RENDER_NS   ?= smg
HELM_ENV     = HELM_CACHE_HOME=$(TOOLS_DIR)/helm-home/cache HELM_CONFIG_HOME=$(TOOLS_DIR)/helm-home/config HELM_DATA_HOME=$(TOOLS_DIR)/helm-home/data
HELM_RENDER  = $(HELM_ENV) $(HELM) template smg $(CHART) --namespace $(RENDER_NS) --kube-version $(K8S_VERSION)
KUBECONFORM_RUN = $(KUBECONFORM) -strict -summary -kubernetes-version $(K8S_VERSION) \
	-schema-location $(K8S_SCHEMAS) -schema-location 'deploy/check/schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json'
TOOL_INSTALL = GOTOOLCHAIN=local GOFLAGS=-buildvcs=false nice -n 10 $(GO) install

.PHONY: tools deploy-check deploy-render rules-check helm-bin

## tools: build helm, kubeconform, promtool and the Kubernetes JSON schemas into $(TOOLS_DIR) (once per version)
tools: $(HELM) $(KUBECONFORM) $(PROMTOOL) $(K8S_SCHEMAS)/.done

## helm-bin: helm alone (test/deploy renders the chart with it)
helm-bin: $(HELM)
$(HELM):
	GOBIN=$(@D) $(TOOL_INSTALL) helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
$(KUBECONFORM):
	GOBIN=$(@D) $(TOOL_INSTALL) github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)
$(PROMTOOL):
	GOBIN=$(@D) $(TOOL_INSTALL) github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)
# Schemas come from the swagger.json inside the k8s.io/kubernetes module zip (about 22 MB from
# the Go module proxy; nothing is built).
$(K8S_SCHEMAS)/.done: deploy/check/k8s_schemas.py
	dir=$$(cd /tmp && $(GO) mod download -json k8s.io/kubernetes@v$(K8S_VERSION) | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])') && \
	python3 deploy/check/k8s_schemas.py $$dir/api/openapi-spec/swagger.json $(K8S_SCHEMAS) $(K8S_VERSION)
	touch $@

## deploy-render: regenerate deploy/k8s/smg.yaml from the Helm chart's defaults
deploy-render: $(HELM)
	@mkdir -p $(dir $(RENDERED))
	{ echo '# Rendered by `make deploy-render` from deploy/helm/smg (default values, namespace $(RENDER_NS)). Do not edit.'; \
	  $(HELM_RENDER); } > $(RENDERED)

## deploy-check: helm lint, rendered == committed manifests, kubeconform, Cloud Run (Knative), ECS (cfn-lint, aws-cli), Compose (compose-go), Dockerfile (BuildKit lint)
deploy-check: $(HELM) $(KUBECONFORM) $(K8S_SCHEMAS)/.done
	$(HELM_ENV) $(HELM) lint --strict $(CHART)
	$(HELM_ENV) $(HELM) lint --strict $(CHART) -f $(CHART)/ci/full-values.yaml
	$(HELM_ENV) $(HELM) lint --strict $(CHART) -f $(CHART)/ci/all-namespaces-values.yaml
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	{ echo '# Rendered by `make deploy-render` from deploy/helm/smg (default values, namespace $(RENDER_NS)). Do not edit.'; \
	  $(HELM_RENDER); } > $$tmp/default.yaml && \
	{ diff -u $(RENDERED) $$tmp/default.yaml || { echo '$(RENDERED) is stale: run make deploy-render'; exit 1; }; } && \
	$(HELM_RENDER) -f $(CHART)/ci/full-values.yaml > $$tmp/full.yaml && \
	$(HELM_RENDER) -f $(CHART)/ci/all-namespaces-values.yaml > $$tmp/allns.yaml && \
	$(KUBECONFORM_RUN) $(RENDERED) $$tmp/full.yaml $$tmp/allns.yaml && \
	(cd tools/deploycheck && SMG_RENDERED="$$tmp/full.yaml $$tmp/allns.yaml" nice -n 10 $(GO) test -count=1 -run RBAC .) && \
	python3 deploy/check/ecs_cfn.py deploy/ecs/task-definition.json $$tmp/ecs-cfn.json && \
	if command -v cfn-lint >/dev/null; then cfn-lint $$tmp/ecs-cfn.json && echo 'cfn-lint: ECS task definition ok'; \
	else echo 'cfn-lint not installed: ECS schema check skipped (docs/deploy.md)'; fi && \
	if command -v aws >/dev/null; then \
	  out=$$(AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=y AWS_EC2_METADATA_DISABLED=true AWS_MAX_ATTEMPTS=1 \
	    aws ecs register-task-definition --region us-east-1 --endpoint-url http://127.0.0.1:9 \
	    --cli-input-json file://deploy/ecs/task-definition.json 2>&1); \
	  case "$$out" in *"Could not connect to the endpoint URL"*) echo 'aws-cli: ECS task definition input ok';; \
	    *) echo "$$out"; exit 1;; esac; \
	else echo 'aws-cli not installed: ECS input check skipped'; fi
	cd tools/deploycheck && nice -n 10 $(GO) test -count=1 ./...
	cd tools/dockerfilelint && nice -n 10 $(GO) run . ../../deploy/Dockerfile

## rules-check: promtool check rules + test rules on the alert rules, the Grafana dashboard lint and its queries' promtool tests (deploy/check/dashboard_test.yaml)
rules-check: $(PROMTOOL)
	$(PROMTOOL) check rules deploy/monitoring/alerts.yaml
	$(PROMTOOL) test rules deploy/monitoring/alerts_test.yaml
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	python3 deploy/check/dashboard_rules.py deploy/monitoring/dashboard.json deploy/check/known_series.txt $$tmp/dashboard-rules.json && \
	$(PROMTOOL) check rules $$tmp/dashboard-rules.json >/dev/null && echo 'dashboard: every panel query parses' && \
	cp deploy/check/dashboard_test.yaml $$tmp/ && $(PROMTOOL) test rules $$tmp/dashboard_test.yaml
	cd tools/dashcheck && nice -n 10 $(GO) test -count=1 ./...

STATICCHECK_VERSION ?= v0.8.2
# staticcheck type-checks the standard library of the toolchain that builds the code, so it is
# built by that same toolchain (the Makefile's GOTOOLCHAIN) and cached under both versions: one
# built by go1.26 fails on go1.27's library ("method must have no type parameters").
STATICCHECK_GO ?= $(or $(GOTOOLCHAIN),local)
STATICCHECK := $(TOOLS_DIR)/staticcheck-$(STATICCHECK_VERSION)-$(STATICCHECK_GO)/staticcheck
$(STATICCHECK):
	GOBIN=$(@D) GOTOOLCHAIN=$(STATICCHECK_GO) GOFLAGS=-buildvcs=false nice -n 10 $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

.PHONY: lint
## lint: staticcheck (checks configured in staticcheck.conf) over the gateway module; the
## findings in tools/lint/baseline.txt are tolerated until fixed (tools/lint/staticcheck.sh)
lint: $(STATICCHECK)
	nice -n 10 ./tools/lint/staticcheck.sh $(STATICCHECK)
